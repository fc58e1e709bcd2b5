void k(int n, double A[n]) {
    n + 1 = 3;
    A[0] = n;
}
