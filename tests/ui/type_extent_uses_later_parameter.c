// An extent may only use earlier scalar parameters.
void k(double A[n], int n) {
    A[0] = 1.0;
}
