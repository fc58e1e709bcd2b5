// An extent of an array parameter may not modify variables (C would increment n on entry).
long k(int n, double A[n++]) {
    return n;
}
