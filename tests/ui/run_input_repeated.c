// ARGS: run $FILE --entry k --input A=tests/ui/fixtures/f64_len3.npy --input A=tests/ui/fixtures/f64_len3.npy
// EXIT: 2
// A repeated --input for the same array silently took the last; now an error.
void k(double A[3]) {
    A[0] = 1.0;
}
