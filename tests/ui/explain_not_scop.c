// ARGS: explain $FILE --entry k --tile-sizes 16
// EXIT: 0
// Why loop nests are not SCoPs: an indirect subscript, a while loop, a non-affine bound;
// the affine nest in the middle is one.
void k(int n, int idx[n], double A[n], double B[n][n])
{
    for (int i = 0; i < n; i++)
        A[idx[i]] += 1.0;
    int m = 0;
    while (m < n)
        m += 2;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            B[j][i] = B[i][j] + 1.0;
    for (int i = 0; i < n * n; i++)
        A[0] += 1.0;
}
