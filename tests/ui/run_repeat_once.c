// ARGS: run $FILE --entry k -D n=1000 --init random:5 --mode opt --threads 2
// EXIT: 0
// One call of run_repeat.c: the same checksums.
void k(int n, double a[n], double b[n][n]) {
    for (int i = 0; i < n; i++) {
        a[i] = 2.0 * a[i];
        for (int j = 0; j < n; j++)
            b[i][j] = b[i][j] + a[i];
    }
}
