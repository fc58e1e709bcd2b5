#ifdef FAST
#endif
void k(int n, double A[n]) {
    A[0] = 1.0;
}
