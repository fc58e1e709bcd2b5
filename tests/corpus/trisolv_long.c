// ENTRY: trisolv
// DESC: lower triangular solve L x = b with `long` counters declared at the top
// SCOPS: 1
// RUN: -D n=400
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=31
void trisolv(long n, double L[n][n], double x[n], double b[n])
{
  long i, j;
  for (i = 0; i < n; i++) {
    x[i] = b[i];
    for (j = 0; j < i; j++)
      x[i] -= L[i][j] * x[j];
    x[i] = x[i] / (L[i][i] + 4.0);
  }
}
