// `char` is signed; `unsigned char` (like every unsigned type) is rejected where it is
// written.
void k(int n, int A[n]) {
    unsigned char c = 200;
    A[0] = c;
}
