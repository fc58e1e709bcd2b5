// ARGS: run $FILE --entry k --mode opt -D n=2147483645 --init random:1
// EXIT: 0
// `n + 5` wraps to a negative value: no iteration of the inner loop runs (interp's
// checksum); opt ran ~2^31.
void k(double A[10], int n) {
  for (int i = 0; i < 10; i++) for (int j = 0; j < n + 5; j++) A[i] += 1.0;
}
