// ENTRY: transpose
// DESC: calibration micro-kernel: a transposing copy (one strided load, one store per element)
// RUN: -D n=2000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=7
void transpose(int n, double A[n][n], double B[n][n])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            B[i][j] = A[j][i];
}
