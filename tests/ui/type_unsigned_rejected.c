void k(int n, unsigned A[n]) {
    A[0] = 1;
}
