// ARGS: run $FILE --entry k -D n=1 -D s=-1 --mode jit
void k(int n, int s, long A[n]) {
    A[0] = A[0] >> s;
}
