// ENTRY: seed
// DESC: 2-D wavefront recurrence: each interior cell averages its north and west neighbours
// RUN: -D n=1400
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=53
// BENCH: -D n=8000

// A[i][j] depends on A[i-1][j] and A[i][j-1]: no loop is parallel as
// written, but anti-diagonals (i + j = const) are.
void seed(int n, double A[n][n])
{
    for (int i = 1; i < n; i++)
        for (int j = 1; j < n; j++)
            A[i][j] = 0.5 * (A[i - 1][j] + A[i][j - 1]) + 0.25 * A[i][j];
}
