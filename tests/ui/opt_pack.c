// ARGS: explain $FILE --entry kernels --tile-sizes 128 -D N=11 -D M=13 -D K=7 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2
// EXIT: 0
// What `explain` says of the panel copies of opt_pack_run.c's kernels: each micro-kernel's
// note names the operands copied (the array, the panel width, the subscript split into
// panels). Which operands qualify is checked independently in crates/poly/tests/pack.rs.
#define N 64
#define M 64
#define K 64
void kernels(double alpha, double beta, double C[N][M], double A[N][K], double B[K][M],
             double S[N][N], double Bt[M][K], double D[N][M]) {
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < M; j++)
                C[i][j] += alpha * A[i][k] * B[k][j];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < K; k++)
                S[i][j] += (alpha * A[i][k]) * A[j][k];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++)
            for (int k = 0; k < K; k++)
                D[i][j] += A[i][k] * (Bt[j][k] / beta);
}
