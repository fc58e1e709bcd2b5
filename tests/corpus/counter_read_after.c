// ENTRY: prefix_then_count
// DESC: counters declared at the top where one loop's exit value is used afterwards (`last`
// DESC: = i): its loops keep their code; the j loops around and inside them are SCoPs
// SCOPS: 3
// RUN: -D n=500
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=23
void prefix_then_count(int n, double a[n], double p[n], long last[1])
{
  int i, j;
  for (j = 0; j < n; j++)
    p[j] = 0.0;
  for (i = 0; i < n; i++)
    for (j = 0; j <= i; j++)
      p[i] += a[j];
  for (i = 0; i < n && p[i] < 1.0e300; i++)
    a[i] = a[i] * 0.5;
  last[0] = i;
  for (j = 0; j < n; j++)
    a[j] += p[j];
}
