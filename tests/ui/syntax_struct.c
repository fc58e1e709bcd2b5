struct point { double x, y; };
void k(int n, double A[n]) {
    A[0] = 1.0;
}
