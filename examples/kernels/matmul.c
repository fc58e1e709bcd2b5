// ENTRY: matmul
// DESC: square matrix product C = A*B, one row per call of matmul_row (skeleton benchmark)
// RUN: -D n=160
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=37
// BENCH: -D n=1200

// Per-element function for a parallel map over rows: computes row i of C.
void matmul_row(int n, int i, double A[n][n], double B[n][n], double C[n][n])
{
    for (int j = 0; j < n; j++)
        C[i][j] = 0.0;
    for (int k = 0; k < n; k++) {
        double a = A[i][k];
        for (int j = 0; j < n; j++)
            C[i][j] += a * B[k][j];
    }
}

void matmul(int n, double A[n][n], double B[n][n], double C[n][n])
{
    for (int i = 0; i < n; i++)
        matmul_row(n, i, A, B, C);
}
