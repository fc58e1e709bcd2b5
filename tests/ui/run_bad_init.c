// ARGS: run $FILE --entry k -D n=3 --init ones
// EXIT: 2
void k(int n, double A[n]) {
    A[0] = 1.0;
}
