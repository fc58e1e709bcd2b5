void f(int n, double A[n]) { A[0] = 1.0; }
void k(int n, double A[n]) {
    double x = f(n, A);
    A[1] = x;
}
