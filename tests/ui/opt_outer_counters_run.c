// ARGS: run $FILE --entry k --mode opt -D n=13 --init random:5
// EXIT: 0
// The kernel of opt_outer_counters, run optimised: the checksums are the interpreter's
// (checked when this expectation was written: `--mode interp` prints the same lines).
void k(int n, double A[n][n], double x[n], long out[1]) {
  int i, j, t;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] * 0.5 + x[j];
  for (j = 0; j < n; j++)
    x[j] = 0.0;
  for (t = 0; t < n; t++)
    x[t] += 1.0;
  out[0] = t;
}
