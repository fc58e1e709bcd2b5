// ARGS: run $FILE --entry k -D n=4
// The interpreter's report, for comparison with run_jit_fault_in_tail_call.
long walk(int n, long A[n], int i) {
    if (i == 0)
        return A[n];
    return walk(n, A, i - 1) + A[i % n];
}
long k(int n, long A[n]) {
    return walk(n, A, 50) * 2;
}
