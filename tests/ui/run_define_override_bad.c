// ARGS: run $FILE --entry k -D n=2 -D N=3.5
// EXIT: 1
// N is used as an integer extent; 3.5 is not an integer.
#define N 2
void k(int n, double A[n][N]) {
    A[0][0] = 1.0;
}
