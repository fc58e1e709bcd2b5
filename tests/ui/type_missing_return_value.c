double f(double x) {
    return;
}
void k(int n, double A[n]) { A[0] = f(1.0); }
