// ARGS: run $FILE --entry k -D n=300 --init random:5 --mode opt --threads 2 --repeat 4 --no-versions
// EXIT: 0
// --repeat calls the kernel on fresh copies of the inputs: the kernel updates `b` in place,
// so a call on the previous call's outputs would halve `b` again and fail the check that
// every call gives the first call's outputs. The checksums are the reference
// interpreter's (run_repeat_once.c). (Without --no-versions the calls would also time the
// SCoP's two versions and print the one kept, which depends on the machine.)
void k(int n, double a[n], double b[n][n]) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            b[i][j] = b[i][j] * 0.5 + a[i];
}
