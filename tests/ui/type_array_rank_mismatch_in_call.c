void row(int m, double R[m]) { R[0] = 1.0; }
void k(int n, double A[n][n]) {
    row(n, A[0][0]);
}
