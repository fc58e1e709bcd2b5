// ARGS: run $FILE --entry k -D n=3 --input Z=tests/ui/fixtures/f64_len3.npy
// EXIT: 2
void k(int n, double A[n]) {
    A[0] = 1.0;
}
