// ENTRY: doitgen
// DESC: multiresolution kernel: every row A[r][q][*] is replaced by its product with the matrix C4
// RUN: -D nr=30 -D nq=32 -D np=64
// TEST: -D nr=0 -D nq=0 -D np=0
// TEST: -D nr=1 -D nq=1 -D np=1
// TEST: -D nr=2 -D nq=3 -D np=5
// TEST: -D nr=5 -D nq=7 -D np=17
// BENCH: -D nr=150 -D nq=160 -D np=256

// row <- row * C4, using sum as scratch space (row is passed as A[r][q]).
void row_times(int np, double row[np], double C4[np][np], double sum[np])
{
    for (int p = 0; p < np; p++) {
        double s = 0.0;
        for (int k = 0; k < np; k++)
            s += row[k] * C4[k][p];
        sum[p] = s;
    }
    for (int p = 0; p < np; p++)
        row[p] = sum[p];
}

void doitgen(int nr, int nq, int np, double A[nr][nq][np], double C4[np][np], double sum[np])
{
    for (int r = 0; r < nr; r++)
        for (int q = 0; q < nq; q++)
            row_times(np, A[r][q], C4, sum);
}
