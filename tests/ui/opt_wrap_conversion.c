// ARGS: run $FILE --entry k --mode opt -D n=1099511627776 --init random:1
// EXIT: 1
// `int i = n - 5` truncates a `long`: the interpreter faults on the truncated index; opt
// ran clean.
void k(double A[10], long n) {
  for (int i = n - 5; i < n; i++) A[i - n + 5] += 1.0;
}
