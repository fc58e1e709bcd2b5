// ARGS: run $FILE --entry k -D n=4 --mode jit
// A fault deep in a chain of tail calls is reported from where it happened.
long walk(int n, long A[n], int i) {
    if (i == 0)
        return A[n];
    return walk(n, A, i - 1) + A[i % n];
}
long k(int n, long A[n]) {
    return walk(n, A, 50) * 2;
}
