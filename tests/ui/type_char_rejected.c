void k(int n, double A[n]) {
    char c = 1;
    A[0] = c;
}
