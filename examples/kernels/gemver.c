// ENTRY: gemver
// DESC: A += u1*v1^T + u2*v2^T; x += beta*A^T*y + z; w += alpha*A*x
// RUN: -D n=800 -D alpha=1.5 -D beta=1.2
// TEST: -D n=0 -D alpha=1.5 -D beta=1.2
// TEST: -D n=1 -D alpha=1.5 -D beta=1.2
// TEST: -D n=2 -D alpha=-1.0 -D beta=0.5
// TEST: -D n=29 -D alpha=1.5 -D beta=1.2
// BENCH: -D n=8000 -D alpha=1.5 -D beta=1.2

void gemver(int n, double alpha, double beta, double A[n][n],
            double u1[n], double v1[n], double u2[n], double v2[n],
            double w[n], double x[n], double y[n], double z[n])
{
    // rank-2 update
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            A[i][j] = A[i][j] + u1[i] * v1[j] + u2[i] * v2[j];
    // x = x + beta * A^T * y
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            x[i] = x[i] + beta * A[j][i] * y[j];
    for (int i = 0; i < n; i++)
        x[i] = x[i] + z[i];
    // w = w + alpha * A * x
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += A[i][j] * x[j];
        w[i] = w[i] + alpha * s;
    }
}
