void k(int n, double A[n]) {
    double x = 1.0;
    A[x] = 2.0;
}
