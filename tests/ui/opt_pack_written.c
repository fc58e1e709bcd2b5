// ARGS: explain $FILE --entry trmm_like --tile-sizes 128 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2
// EXIT: 0
// No panel copy of an operand the SCoP writes: here `B` is read at `B[k][j]` by the
// micro-kernel's statement and written by the scaling nest that precedes it in the same SCoP,
// so a copy made before the nest would hold stale values. `A[i][k]` is read-only and is
// copied.
#define N 64
void trmm_like(double alpha, double A[N][N], double B[N][N], double C[N][N]) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            B[i][j] = alpha * B[i][j];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++)
            for (int j = 0; j < N; j++)
                C[i][j] += A[i][k] * B[k][j];
}
