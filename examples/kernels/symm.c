// ENTRY: symm
// DESC: symmetric matrix multiply C = alpha*S*B + beta*C, S given by the lower triangle of A
// RUN: -D m=150 -D n=180 -D alpha=1.5 -D beta=1.2
// TEST: -D m=0 -D n=0 -D alpha=1.5 -D beta=1.2
// TEST: -D m=1 -D n=1 -D alpha=1.5 -D beta=1.2
// TEST: -D m=2 -D n=3 -D alpha=1.5 -D beta=1.2
// TEST: -D m=19 -D n=11 -D alpha=-1.25 -D beta=0.75
// BENCH: -D m=1000 -D n=1200 -D alpha=1.5 -D beta=1.2

// Only A[i][k] with k <= i is read; the upper triangle of A is ignored.
double sym_at(int m, double A[m][m], int i, int k)
{
    return k <= i ? A[i][k] : A[k][i];
}

void symm(int m, int n, double alpha, double beta,
          double C[m][n], double A[m][m], double B[m][n])
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < m; k++)
                s += sym_at(m, A, i, k) * B[k][j];
            C[i][j] = beta * C[i][j] + alpha * s;
        }
}
