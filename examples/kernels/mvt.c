// ENTRY: mvt
// DESC: x1 += A * y1 and x2 += A^T * y2 (two matrix-vector products)
// RUN: -D n=1200
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=23
// BENCH: -D n=9000

void mvt(int n, double A[n][n], double x1[n], double x2[n], double y1[n], double y2[n])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            x1[i] = x1[i] + A[i][j] * y1[j];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            x2[i] = x2[i] + A[j][i] * y2[j];
}
