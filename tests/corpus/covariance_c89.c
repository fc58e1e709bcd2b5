// ENTRY: covariance
// DESC: covariance matrix: column means, centring, symmetric product; counters at the top,
// DESC: a triangular loop, a float_n divisor passed in
// SCOPS: 1
// RUN: -D m=80 -D n=100 -D float_n=100.0
// TEST: -D m=0 -D n=2 -D float_n=2.0
// TEST: -D m=1 -D n=1 -D float_n=1.0
// TEST: -D m=3 -D n=2 -D float_n=2.0
// TEST: -D m=11 -D n=13 -D float_n=13.0
void covariance(int m, int n, double float_n, double data[n][m], double cov[m][m], double mean[m])
{
  int i, j, k;
  for (j = 0; j < m; j++) {
    mean[j] = 0.0;
    for (i = 0; i < n; i++)
      mean[j] += data[i][j];
    mean[j] /= float_n;
  }
  for (i = 0; i < n; i++)
    for (j = 0; j < m; j++)
      data[i][j] -= mean[j];
  for (i = 0; i < m; i++)
    for (j = i; j < m; j++) {
      cov[i][j] = 0.0;
      for (k = 0; k < n; k++)
        cov[i][j] += data[k][i] * data[k][j];
      cov[i][j] /= (float_n - 1.0);
      cov[j][i] = cov[i][j];
    }
}
