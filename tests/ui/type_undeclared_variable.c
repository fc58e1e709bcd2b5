void k(int n, double A[n]) {
    for (int i = 0; i < n; i++)
        A[i] = alpha * A[i];
}
