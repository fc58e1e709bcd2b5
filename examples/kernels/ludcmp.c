// ENTRY: ludcmp
// DESC: LU decomposition and forward/back substitution (PolyBench's ludcmp as written: the temporary and the counters declared at the top)
// RUN: -D n=240
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=31
// BENCH: -D n=2000

void ludcmp(int n, double A[n][n], double b[n], double x[n], double y[n])
{
    int i, j, k;
    double w;
    // Entries are in [0,1): adding n to the diagonal makes the matrix strictly diagonally
    // dominant, so that no pivoting is needed.
    for (i = 0; i < n; i++)
        A[i][i] += n;
    for (i = 0; i < n; i++) {
        for (j = 0; j < i; j++) {
            w = A[i][j];
            for (k = 0; k < j; k++)
                w -= A[i][k] * A[k][j];
            A[i][j] = w / A[j][j];
        }
        for (j = i; j < n; j++) {
            w = A[i][j];
            for (k = 0; k < i; k++)
                w -= A[i][k] * A[k][j];
            A[i][j] = w;
        }
    }
    for (i = 0; i < n; i++) {
        w = b[i];
        for (j = 0; j < i; j++)
            w -= A[i][j] * y[j];
        y[i] = w;
    }
    for (i = n - 1; i >= 0; i--) {
        w = y[i];
        for (j = i + 1; j < n; j++)
            w -= A[i][j] * x[j];
        x[i] = w / A[i][i];
    }
}
