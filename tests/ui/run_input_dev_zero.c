// ARGS: run $FILE --entry k --input A=/dev/zero
// EXIT: 2
// Reading /dev/zero never ended; only regular files are read.
void k(double A[3]) {
    A[0] = 1.0;
}
