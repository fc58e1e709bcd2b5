void k(int n, double A[n]) {
    else A[0] = 1.0;
}
