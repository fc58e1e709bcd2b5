// ENTRY: matvec_int
// DESC: integer y = A x + y and z = A^T w, wrapping int arithmetic, counters at the top,
// DESC: one counter reused by both products
// SCOPS: 1
// RUN: -D m=300 -D n=200
// TEST: -D m=0 -D n=3
// TEST: -D m=1 -D n=1
// TEST: -D m=2 -D n=7
// TEST: -D m=19 -D n=23
void matvec_int(int m, int n, int A[m][n], int x[n], int y[m], int w[m], int z[n])
{
  int i, j;
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++)
      y[i] = y[i] + A[i][j] * x[j];
  for (j = 0; j < n; j++)
    z[j] = 0;
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++)
      z[j] += A[i][j] * w[i];
}
