// ENTRY: gesummv
// DESC: y = alpha*A*x + beta*B*x (sum of two matrix-vector products)
// RUN: -D n=1200 -D alpha=1.5 -D beta=1.2
// TEST: -D n=0 -D alpha=1.5 -D beta=1.2
// TEST: -D n=1 -D alpha=1.5 -D beta=1.2
// TEST: -D n=31 -D alpha=0.5 -D beta=-2.0
// BENCH: -D n=6500 -D alpha=1.5 -D beta=1.2

void gesummv(int n, double alpha, double beta, double A[n][n], double B[n][n],
             double tmp[n], double x[n], double y[n])
{
    for (int i = 0; i < n; i++) {
        double sa = 0.0, sb = 0.0;
        for (int j = 0; j < n; j++) {
            sa += A[i][j] * x[j];
            sb += B[i][j] * x[j];
        }
        tmp[i] = sa;
        y[i] = alpha * sa + beta * sb;
    }
}
