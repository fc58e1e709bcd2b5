// ARGS: run $FILE --entry k -D n=1
// Unbounded recursion stops at 10,000 nested calls with an error.
long down(long x) { return down(x + 1) + 1; }
void k(int n, long A[n]) {
    A[0] = down(0);
}
