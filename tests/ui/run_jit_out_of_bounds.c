// ARGS: run $FILE --entry k -D n=10 --mode jit
// The JIT keeps the interpreter's guards: the same error, the same location.
void k(int n, double A[n], double B[n]) {
    for (int i = 0; i <= n; i++)
        B[0] += A[i];
}
