double sq(double x) { return x * x; }
void k(int n, double A[n]) {
    A[0] = sq(A[0], A[1]);
}
