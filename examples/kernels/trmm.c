// ENTRY: trmm
// DESC: triangular matrix multiply B = alpha*U*B, U unit upper triangular taken from A
// RUN: -D m=200 -D n=240 -D alpha=1.5
// TEST: -D m=0 -D n=0 -D alpha=1.5
// TEST: -D m=1 -D n=2 -D alpha=1.5
// TEST: -D m=2 -D n=1 -D alpha=1.5
// TEST: -D m=23 -D n=17 -D alpha=-0.5
// BENCH: -D m=1400 -D n=1600 -D alpha=1.5

// U has an implicit unit diagonal and U[i][k] = A[i][k] for k > i.  Row i of
// the result only reads rows k > i of B, which are still unmodified when we
// sweep i upwards, so the update can be done in place.
void trmm(int m, int n, double alpha, double A[m][m], double B[m][n])
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = B[i][j];
            for (int k = i + 1; k < m; k++)
                s += A[i][k] * B[k][j];
            B[i][j] = alpha * s;
        }
}
