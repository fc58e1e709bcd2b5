// ARGS: run $FILE --entry k -D n=1500 --init random:5 --mode opt --threads 1
// EXIT: 0
// One call of run_repeat.c: the same checksums.
void k(int n, double a[n], double b[n][n]) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            b[i][j] = b[i][j] * 0.5 + a[i];
}
