// ARGS: explain $FILE --entry seed --tile-sizes 128
// EXIT: 0
// The seed example: exact flow dependences { S0[i,j] -> S0[i,j+1]; S0[i,j] -> S0[i+1,j] }
// and a tiled wavefront (tile member 0 skewed) whose second tile loop is parallel.
void seed(int n, double A[n][n])
{
    for (int i = 1; i < n; i++)
        for (int j = 1; j < n; j++)
            A[i][j] = 0.5 * (A[i - 1][j] + A[i][j - 1]) + 0.25 * A[i][j];
}
