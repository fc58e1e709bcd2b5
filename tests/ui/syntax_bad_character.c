void k(int n, double A[n]) {
    A[0] = 1.0 @ 2.0;
}
