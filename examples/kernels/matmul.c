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

// Per-row task for `tessera skel` (parMapChunk over rows; A and B are read-only inputs):
// row i of A*B, computed into a local array and returned as its sum.
double matmul_row_sum(int n, int i, double A[n][n], double B[n][n])
{
    double c[n];
    for (int j = 0; j < n; j++)
        c[j] = 0.0;
    for (int k = 0; k < n; k++) {
        double a = A[i][k];
        for (int j = 0; j < n; j++)
            c[j] += a * B[k][j];
    }
    double s = 0.0;
    for (int j = 0; j < n; j++)
        s += c[j];
    return s;
}

void matmul(int n, double A[n][n], double B[n][n], double C[n][n])
{
    for (int i = 0; i < n; i++)
        matmul_row(n, i, A, B, C);
}
