// The loop variable's scope ends with the loop.
void k(int n, double A[n]) {
    for (int i = 0; i < n; i++)
        A[i] = 0.0;
    A[i - 1] = 1.0;
}
