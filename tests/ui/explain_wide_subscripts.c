// ARGS: explain $FILE --entry shift --no-tile
// EXIT: 0
// `int` subscripts with a constant offset (`j + 1`, `i + 1`) whose counter is bounded by an
// `int` parameter (`j < n - 1`) are within `int` because the parameter is an `int`, so they
// are computed in 64 bits (`S0: j + 1, S0: i + 1`) and stay affine for LLVM's vectoriser.
// `k + 1` in the second nest has a `long` bound: on the domain alone `k` may reach INT_MAX,
// so it is not proven (the run-time no-wrap test at entry is not used by this proof).
void shift(int n, long m, double A[n][n], double B[n][n], double C[m + 1])
{
    int i, j, k;
    for (i = 0; i < n - 1; i++)
        for (j = 0; j < n - 1; j++)
            A[i][j] = B[i + 1][j] + B[i][j + 1];
    for (k = 0; k < m; k++)
        C[k + 1] = C[k + 1] * 0.5;
}
