// ARGS: run $FILE --entry k -D n=7 -D N=3 --init random:5 --mode jit
// EXIT: 0
// The same checksums as ok_run_interp.c.
#define N 2
void k(int n, double A[n][N], long C[n]) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < N; j++)
            A[i][j] = A[i][j] * 0.5 + i - j;
        C[i] = (C[i] * 31 + i) % 7;
    }
}
