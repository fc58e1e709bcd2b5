void k(int n, double A[n]) {
    A[0] = "hello";
}
