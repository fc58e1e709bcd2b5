// ARGS: run $FILE --entry mm -D n=37 -D m=29 --mode opt --scratch-limit 64
// EXIT: 0
// As opt_scratch, but the scratch array (37 x 37 doubles) exceeds the limit of 64 bytes:
// the run-time test sends the run to the original loop nest. The checksums are the
// interpreter's (`--mode interp`).
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
