// ARGS: run $FILE --entry k -D n=5 --input A=tests/ui/fixtures/f64_len3.npy
// EXIT: 2
// The .npy holds 3 doubles; the parameter declares 5.
void k(int n, double A[n]) {
    A[0] = 1.0;
}
