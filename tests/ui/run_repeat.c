// ARGS: run $FILE --entry k -D n=1500 --init random:5 --mode opt --threads 1 --repeat 4
// EXIT: 0
// --repeat calls the kernel on fresh copies of the inputs: the kernel updates `b` in place,
// so a call on the previous call's outputs would halve `b` again and fail the check that
// every call gives the first call's outputs; the checksums are those of one call
// (run_repeat_once.c). The calls also run both versions of the SCoP (the optimised code,
// which walks `b` by rows, and the code as written, by columns: several times slower), and
// the optimised version is kept.
void k(int n, double a[n], double b[n][n]) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            b[i][j] = b[i][j] * 0.5 + a[i];
}
