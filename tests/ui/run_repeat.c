// ARGS: run $FILE --entry k -D n=1000 --init random:5 --mode opt --threads 2 --repeat 4
// EXIT: 0
// --repeat calls the kernel on fresh copies of the inputs: the kernel updates `a` in place,
// so a call on the previous call's outputs would double `a` again and fail the check that
// every call gives the first call's outputs; the checksums are those of one call
// (run_repeat_once.c).
void k(int n, double a[n], double b[n][n]) {
    for (int i = 0; i < n; i++) {
        a[i] = 2.0 * a[i];
        for (int j = 0; j < n; j++)
            b[i][j] = b[i][j] + a[i];
    }
}
