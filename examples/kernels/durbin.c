// ENTRY: durbin
// DESC: Levinson-Durbin recursion solving the Toeplitz system T*y = -r (T has unit diagonal)
// RUN: -D n=1600
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=41
// BENCH: -D n=40000

// T[i][j] = 1 if i == j, else r[|i-j|-1]; the right-hand side is -r.
// The random r is scaled so that sum |r[k]| < 1/2, which makes T strictly
// diagonally dominant, hence positive definite, so every reflection
// coefficient stays inside (-1, 1) and beta stays positive.
void durbin(int n, double r[n], double y[n], double z[n])
{
    if (n <= 0)
        return;
    for (int k = 0; k < n; k++)
        r[k] = r[k] / (2.0 * n);
    y[0] = -r[0];
    double beta = 1.0;
    double alpha = -r[0];
    for (int k = 1; k < n; k++) {
        beta = (1 - alpha * alpha) * beta;
        double s = 0.0;
        for (int i = 0; i < k; i++)
            s += r[k - i - 1] * y[i];
        alpha = -(r[k] + s) / beta;
        for (int i = 0; i < k; i++)
            z[i] = y[i] + alpha * y[k - i - 1];
        for (int i = 0; i < k; i++)
            y[i] = z[i];
        y[k] = alpha;
    }
}
