// ARGS: run $FILE --entry twice -D n=50 --mode opt --reverse-parallel
// EXIT: 0
// `shift` is called with the same array for `A` and `B`, so `A[i + 1] = B[i] + 1.0` is a
// recurrence, not a parallel loop. The model treats distinct array variables as distinct
// memory, so the optimiser must keep the original code here (`--reverse-parallel` runs loops
// marked parallel backwards: a false mark would change the checksum, which must equal the
// interpreter's).
void shift(int n, double A[n], double B[n]) {
    for (int i = 0; i < n - 1; i++)
        A[i + 1] = B[i] + 1.0;
}

void twice(int n, double X[n]) {
    shift(n, X, X);
}
