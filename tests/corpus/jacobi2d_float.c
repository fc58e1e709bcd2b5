// ENTRY: jacobi_2d
// DESC: 2-D Jacobi stencil in float, time loop outside, counters declared at the top
// SCOPS: 1
// RUN: -D tsteps=20 -D n=90
// TEST: -D tsteps=0 -D n=5
// TEST: -D tsteps=1 -D n=2
// TEST: -D tsteps=3 -D n=3
// TEST: -D tsteps=4 -D n=17
void jacobi_2d(int tsteps, int n, float A[n][n], float B[n][n])
{
  int t, i, j;
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        B[i][j] = 0.2f * (A[i][j] + A[i][j-1] + A[i][1+j] + A[1+i][j] + A[i-1][j]);
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[i][j] = 0.2f * (B[i][j] + B[i][j-1] + B[i][1+j] + B[1+i][j] + B[i-1][j]);
  }
}
