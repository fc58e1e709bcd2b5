// ARGS: run $FILE --entry kernels --mode opt --no-versions -D N=11 -D M=13 -D K=7 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2 -D alpha=1.5 -D beta=1.2 --init random:7
// EXIT: 0
// Micro-kernel operands copied into panels (tessera_poly::model::Pack) at sizes that are not
// multiples of the panels (2 rows, 4 columns) or of the tiles: gemm's `B[k][j]` (columns)
// and `alpha * A[i][k]` (rows, the product computed once per element of the copy); syrk's
// `A[j][k]` (columns, a row apart in the array) and `(alpha * A[i][k])` of the same array
// (rows); a transposed operand `Bt[j][k] / beta` (columns, a division of the element).
// The checksums are the interpreter's (checked when this expectation was written:
// `--mode interp` prints the same lines).
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
