// ARGS: run $FILE --entry k -D n=3 --mode opt
// EXIT: 2
void k(int n, double A[n]) {
    A[0] = 1.0;
}
