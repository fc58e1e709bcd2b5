// ENTRY: seidel_2d
// DESC: in-place time-stepped Gauss-Seidel 9-point averaging stencil on an n x n grid
// RUN: -D tsteps=30 -D n=200
// TEST: -D tsteps=0 -D n=0
// TEST: -D tsteps=1 -D n=2
// TEST: -D tsteps=2 -D n=3
// TEST: -D tsteps=4 -D n=41
// BENCH: -D tsteps=100 -D n=2000

// Updated values are used as soon as they are written, so every sweep
// carries dependences in both i and j.
void seidel_2d(int tsteps, int n, double A[n][n])
{
    for (int t = 0; t < tsteps; t++)
        for (int i = 1; i <= n - 2; i++)
            for (int j = 1; j <= n - 2; j++)
                A[i][j] = (A[i - 1][j - 1] + A[i - 1][j] + A[i - 1][j + 1]
                         + A[i][j - 1]     + A[i][j]     + A[i][j + 1]
                         + A[i + 1][j - 1] + A[i + 1][j] + A[i + 1][j + 1]) / 9.0;
}
