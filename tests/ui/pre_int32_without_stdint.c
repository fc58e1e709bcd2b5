void k(int n, int32_t A[n]) {
    A[0] = 1;
}
