void k(int n, double A[n]) {
    int x = 1;
    int x = 2;
    A[0] = x;
}
