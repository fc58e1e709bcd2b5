void k(int n, double A[n], double B[n]) {
    A = B;
}
