// ARGS: run $FILE --entry k -D n=1 --mode jit
// The JIT turns this tail recursion into a loop but still counts the calls: the same error
// as the interpreter, at the same depth and place.
long down(long x) { return down(x + 1) + 1; }
void k(int n, long A[n]) {
    A[0] = down(0);
}
