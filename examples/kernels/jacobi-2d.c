// ENTRY: jacobi_2d
// DESC: time-stepped 5-point Jacobi stencil on an n x n grid, ping-ponging between A and B
// RUN: -D tsteps=50 -D n=200
// TEST: -D tsteps=0 -D n=0
// TEST: -D tsteps=1 -D n=1
// TEST: -D tsteps=2 -D n=3
// TEST: -D tsteps=5 -D n=37
// BENCH: -D tsteps=300 -D n=2000

void jacobi_2d(int tsteps, int n, double A[n][n], double B[n][n])
{
    for (int t = 0; t < tsteps; t++) {
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i - 1][j] + A[i + 1][j]);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i - 1][j] + B[i + 1][j]);
    }
}
