// ENTRY: syr2k
// DESC: symmetric rank-2k update of the lower triangle: C = alpha*(A*B^T + B*A^T) + beta*C
// RUN: -D n=160 -D m=200 -D alpha=1.5 -D beta=1.2
// TEST: -D n=0 -D m=0 -D alpha=1.5 -D beta=1.2
// TEST: -D n=1 -D m=1 -D alpha=1.5 -D beta=1.2
// TEST: -D n=2 -D m=3 -D alpha=1.5 -D beta=1.2
// TEST: -D n=17 -D m=29 -D alpha=0.5 -D beta=-1.5
// BENCH: -D n=1000 -D m=1200 -D alpha=1.5 -D beta=1.2

void syr2k(int n, int m, double alpha, double beta,
           double C[n][n], double A[n][m], double B[n][m])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0.0;
            for (int k = 0; k < m; k++)
                s += A[i][k] * B[j][k] + B[i][k] * A[j][k];
            C[i][j] = beta * C[i][j] + alpha * s;
        }
}
