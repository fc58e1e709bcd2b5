// ARGS: run $FILE --entry k -D n=3 --input A=tests/ui/fixtures/f64_len3.npy
// EXIT: 2
// The .npy holds doubles; the parameter is int.
void k(int n, int A[n]) {
    A[0] = 1;
}
