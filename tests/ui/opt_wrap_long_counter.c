// ARGS: run $FILE --entry k --mode opt -D n=9223372036854775807
// EXIT: 1
// The counter reaches LONG_MAX and wraps when stepped: the no-wrap test at the SCoP's entry
// fails, the original guarded code runs and reports the interpreter's error (before the
// test, opt proved the access in bounds, dropped its guard and corrupted the heap).
void k(double A[4], long n) {
  for (long i = n - 3; i <= n; i++) A[i - n + 3] += 1.0;
}
