// ENTRY: seidel
// DESC: Gauss-Seidel 2-D 9-point sweep in place (a wavefront), counters at the top
// SCOPS: 1
// RUN: -D tsteps=10 -D n=120
// TEST: -D tsteps=0 -D n=4
// TEST: -D tsteps=1 -D n=3
// TEST: -D tsteps=2 -D n=2
// TEST: -D tsteps=3 -D n=13
void seidel(int tsteps, int n, double A[n][n])
{
  int t, i, j;
  for (t = 0; t <= tsteps - 1; t++)
    for (i = 1; i <= n - 2; i++)
      for (j = 1; j <= n - 2; j++)
        A[i][j] = (A[i-1][j-1] + A[i-1][j] + A[i-1][j+1]
                   + A[i][j-1] + A[i][j] + A[i][j+1]
                   + A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0;
}
