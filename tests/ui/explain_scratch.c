// ARGS: explain $FILE --entry mm --tile-sizes 8
// EXIT: 0
// The scalar `s` is declared inside the `i, j` loops; the schedule runs `k` outside `j`
// (stride-1 `B[k][j]`), which interleaves the instances of `s`: explain names the scratch
// array, and the generated nest shows the `k` loop outside the `j` loop.
void mm(int n, int m, double C[n][n], double A[n][m], double B[m][n])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < m; k++)
                s += A[i][k] * B[k][j];
            C[i][j] = s * 0.5 + C[i][j];
        }
}
