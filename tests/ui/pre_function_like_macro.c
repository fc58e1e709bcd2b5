#define SQ(x) ((x) * (x))
void k(int n, double A[n]) {
    A[0] = SQ(A[1]);
}
