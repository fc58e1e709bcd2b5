// ARGS: run $FILE --entry row -D n=30 -D r=30 --mode opt
// isl proves index 1 of `C[r][j]` in bounds (0 <= j < n) but not index 0 (`r` is a free
// parameter): the guard of index 0 stays, and the error names the array, the index and
// the location.
void row(int n, int r, double C[n][n], double B[n][n]) {
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++)
            C[r][j] += B[k][j];
}
