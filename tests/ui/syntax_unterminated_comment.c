void k(int n, double A[n]) {
    /* this comment never ends
    A[0] = 1.0;
}
