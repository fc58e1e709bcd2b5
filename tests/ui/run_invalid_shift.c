// ARGS: run $FILE --entry k -D n=1 -D s=40
// A shift count of 40 on a 32-bit int is an error, not C's undefined behaviour.
void k(int n, int s, int A[n]) {
    A[0] = 1 << s;
}
