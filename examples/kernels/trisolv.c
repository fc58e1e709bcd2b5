// ENTRY: trisolv
// DESC: forward substitution: solve L*x = b for lower triangular L (diagonal shifted by n)
// RUN: -D n=2000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=97
// BENCH: -D n=8000

void trisolv(int n, double L[n][n], double x[n], double b[n])
{
    for (int i = 0; i < n; i++) {
        double s = b[i];
        for (int j = 0; j < i; j++)
            s -= L[i][j] * x[j];
        // the random diagonal lies in [0,1); shift it away from zero
        x[i] = s / (L[i][i] + n);
    }
}
