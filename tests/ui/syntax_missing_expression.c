void k(int n, double A[n]) {
    double x = ;
    A[0] = x;
}
