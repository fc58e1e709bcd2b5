// ARGS: run $FILE --entry k --mode opt -D n=2147483647 --init random:1
// EXIT: 0
// `i + n` wraps for i > 0 with n = INT_MAX: the branch is taken once (i = 0), as in the
// interpreter (checksum below equals `--mode interp`'s); opt took it 10 times.
void k(double A[10], int n) {
  for (int i = 0; i < 10; i++) if (i + n > 0) A[i] += 1.0;
}
