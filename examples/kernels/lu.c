// ENTRY: lu
// DESC: in-place LU factorisation without pivoting (Doolittle) of a made-diagonally-dominant matrix
// RUN: -D n=240
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=31
// BENCH: -D n=1600

void lu(int n, double A[n][n])
{
    // Entries are in [0,1), so adding n to the diagonal makes every row
    // strictly diagonally dominant; no pivoting is then needed.
    for (int i = 0; i < n; i++)
        A[i][i] += n;
    // Right-looking elimination: L (unit diagonal) below, U on and above.
    for (int k = 0; k < n; k++) {
        double piv = A[k][k];
        for (int i = k + 1; i < n; i++) {
            double l = A[i][k] / piv;
            A[i][k] = l;
            for (int j = k + 1; j < n; j++)
                A[i][j] -= l * A[k][j];
        }
    }
}
