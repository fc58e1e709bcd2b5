// ENTRY: atax
// DESC: y = A^T * (A * x), matrix transpose times matrix-vector product
// RUN: -D m=1200 -D n=1400
// TEST: -D m=0 -D n=0
// TEST: -D m=1 -D n=2
// TEST: -D m=17 -D n=13
// BENCH: -D m=8000 -D n=9000

void atax(int m, int n, double A[m][n], double x[n], double y[n], double tmp[m])
{
    for (int j = 0; j < n; j++)
        y[j] = 0.0;
    for (int i = 0; i < m; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += A[i][j] * x[j];
        tmp[i] = s;
        for (int j = 0; j < n; j++)
            y[j] += A[i][j] * s;
    }
}
