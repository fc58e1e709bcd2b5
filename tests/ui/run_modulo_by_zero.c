// ARGS: run $FILE --entry k -D n=3 -D d=0
void k(int n, int d, long A[n]) {
    A[0] = n % d;
}
