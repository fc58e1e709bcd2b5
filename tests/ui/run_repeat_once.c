// ARGS: run $FILE --entry k -D n=300 --init random:5 --mode interp
// EXIT: 0
// The reference interpreter, one call, on run_repeat.c's kernel and inputs: the same
// checksums.
void k(int n, double a[n], double b[n][n]) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            b[i][j] = b[i][j] * 0.5 + a[i];
}
