// Control characters and non-ASCII bytes in the source.
void k(int n, double A[n]) {
    A[0] = 1.0;  ~~ ÿþ 
}
