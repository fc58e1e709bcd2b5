// ARGS: run $FILE --entry k -D n=4 --init zeros --mode jit
void k(int n, int A[n]) {
    for (int i = 0; i < n; i++)
        A[i] = 100 / A[i];
}
