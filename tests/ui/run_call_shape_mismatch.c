// ARGS: run $FILE --entry k -D n=4
// The callee declares a longer row than the caller passes.
void row(int m, double R[m]) {
    for (int j = 0; j < m; j++)
        R[j] = 1.0;
}
void k(int n, double A[n][n]) {
    row(n + 1, A[0]);
}
