// Tessera has no global variables.
double scale = 2.0;
void k(int n, double A[n]) {
    A[0] = scale;
}
