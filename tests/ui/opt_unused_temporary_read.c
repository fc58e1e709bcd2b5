// ARGS: run $FILE --entry k --mode opt -D n=3 -D m=0
// EXIT: 1
// `t` is forward-substituted into its uses, but its only use is in a loop that runs zero
// times (m = 0): the read `A[i + 1][j]` must still be checked where the program makes it.
// It stays as a check-only statement; the SCoP's entry test covers it, fails (A[3][0] is
// out of bounds) and the original code reports the interpreter's error.
void k(double A[3][4], double B[4], long n, long m) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < 4; j++) {
      double t = A[i + 1][j];
      for (long l = 0; l < m; l++) B[l] += t;
    }
}
