void k(int n, double A[n]) {
    A[0] = A[1] % 2.0;
}
