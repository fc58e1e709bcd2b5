// ARGS: run $FILE --entry k -D n=5
void k(int n, double A[n]) {
    for (int i = n - 1; i >= -1; i--)
        A[i] = 1.0;
}
