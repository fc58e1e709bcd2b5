// ARGS: explain $FILE --entry k --tile-sizes 128
// EXIT: 0
// The kernel of opt_unused_temporary_read: `t` is substituted into its use; its read stays
// as a check-only statement, outside the model (no statement, no dependence), covered by the
// entry test (`A[i + 1]` needs n <= 2) and omitted by the transformed code.
void k(double A[3][4], double B[4], long n, long m) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < 4; j++) {
      double t = A[i + 1][j];
      for (long l = 0; l < m; l++) B[l] += t;
    }
}
