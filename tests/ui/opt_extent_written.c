// ARGS: run $FILE --entry grow -D n=40 --mode opt
// `A` was bound with the entry value of `n`; the function then writes `n`, so `0 <= i < n`
// no longer proves `A[i]` in bounds: the optimiser must keep the guard (the proof uses an
// extent only if the function never writes its variables), and the error is reported.
void grow(int n, double A[n]) {
    n = n + 1;
    for (int i = 0; i < n; i++)
        A[i] = 2.0 * i;
}
