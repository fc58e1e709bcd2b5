// A statement without its semicolon.
void k(int n, double A[n]) {
    for (int i = 0; i < n; i++)
        A[i] = 1.0
}
