// ARGS: run $FILE --entry k -D n=10
// EXIT: 2
void k(int n, double alpha, double A[n]) {
    for (int i = 0; i < n; i++)
        A[i] *= alpha;
}
