// ARGS: run $FILE --entry mm -D n=37 -D m=29 --mode opt --tile-sizes 8 --reverse-parallel
// EXIT: 0
// The scalar `s` is declared inside the `i, j` loops; the schedule runs `k` outside `j`
// (stride-1 `B[k][j]`), which interleaves the instances of `s`, so the optimiser keeps it as
// a scratch array with one element per `(i, j)`. The checksums are the interpreter's
// (`--mode interp`), with parallel loops run backwards and tiles that do not divide the
// sizes.
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
