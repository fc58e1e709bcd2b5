// ARGS: run $FILE --entry k -D n=10
// The loop reads one element past the end of A.
void k(int n, double A[n], double B[n]) {
    for (int i = 0; i <= n; i++)
        B[0] += A[i];
}
