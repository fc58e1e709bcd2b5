// ARGS: run $FILE --entry k -D n=7 --mode opt
// EXIT: 0
// A SCoP (the loop) and a statement outside it; the result equals --mode interp.
void k(int n, double A[n]) {
    A[0] = 1.0;
    for (int i = 1; i < n; i++)
        A[i] = A[i - 1] * 0.5 + A[i];
}
