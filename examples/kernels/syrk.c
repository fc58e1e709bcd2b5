// ENTRY: syrk
// DESC: symmetric rank-k update of the lower triangle: C = alpha*A*A^T + beta*C
// RUN: -D n=200 -D m=240 -D alpha=1.5 -D beta=1.2
// TEST: -D n=0 -D m=0 -D alpha=1.5 -D beta=1.2
// TEST: -D n=1 -D m=2 -D alpha=1.5 -D beta=1.2
// TEST: -D n=2 -D m=1 -D alpha=1.5 -D beta=1.2
// TEST: -D n=19 -D m=23 -D alpha=-0.75 -D beta=0.5
// BENCH: -D n=1200 -D m=1400 -D alpha=1.5 -D beta=1.2

void syrk(int n, int m, double alpha, double beta, double C[n][n], double A[n][m])
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++)
            C[i][j] *= beta;
        for (int k = 0; k < m; k++) {
            double a = alpha * A[i][k];
            for (int j = 0; j <= i; j++)
                C[i][j] += a * A[j][k];
        }
    }
}
