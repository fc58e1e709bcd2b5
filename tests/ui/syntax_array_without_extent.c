void k(int n, double A[]) {
    A[0] = 1.0;
}
