void k(int n, double A[n]) {
    bool b = true;
    A[0] = b;
}
