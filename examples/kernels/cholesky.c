// ENTRY: cholesky
// DESC: in-place Cholesky factorisation A = L*L^T of a symmetrised, diagonally shifted matrix
// RUN: -D n=300
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=37
// BENCH: -D n=2000

#include <math.h>

void cholesky(int n, double A[n][n])
{
    // Make A symmetric positive definite: average with the transpose, then
    // shift the diagonal by n (strict diagonal dominance).
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            double v = (A[i][j] + A[j][i]) / 2;
            A[i][j] = v;
            A[j][i] = v;
        }
        A[i][i] += n;
    }
    // Row-by-row (Cholesky-Banachiewicz) factorisation into the lower triangle.
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            double s = A[i][j];
            for (int k = 0; k < j; k++)
                s -= A[i][k] * A[j][k];
            A[i][j] = s / A[j][j];
        }
        double d = A[i][i];
        for (int k = 0; k < i; k++)
            d -= A[i][k] * A[i][k];
        A[i][i] = sqrt(d);
        // clear the strict upper triangle so A holds exactly L
        for (int j = i + 1; j < n; j++)
            A[i][j] = 0.0;
    }
}
