// ENTRY: mm2
// DESC: two chained matrix products: T = alpha*A*B, then D = T*C + beta*D
// RUN: -D ni=120 -D nj=130 -D nk=140 -D nl=150 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=0 -D nj=0 -D nk=0 -D nl=0 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=1 -D nj=2 -D nk=1 -D nl=2 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=7 -D nj=11 -D nk=13 -D nl=5 -D alpha=0.25 -D beta=-1.0
// BENCH: -D ni=800 -D nj=900 -D nk=1000 -D nl=1100 -D alpha=1.5 -D beta=1.2

// (C identifiers cannot start with a digit, so the entry is called mm2.)
void mm2(int ni, int nj, int nk, int nl, double alpha, double beta,
         double T[ni][nj], double A[ni][nk], double B[nk][nj],
         double C[nj][nl], double D[ni][nl])
{
    // T = alpha * A * B, dot-product order
    for (int i = 0; i < ni; i++)
        for (int j = 0; j < nj; j++) {
            double s = 0.0;
            for (int k = 0; k < nk; k++)
                s += A[i][k] * B[k][j];
            T[i][j] = alpha * s;
        }
    // D = T * C + beta * D, row-update order
    for (int i = 0; i < ni; i++) {
        for (int l = 0; l < nl; l++)
            D[i][l] = beta * D[i][l];
        for (int j = 0; j < nj; j++) {
            double t = T[i][j];
            for (int l = 0; l < nl; l++)
                D[i][l] += t * C[j][l];
        }
    }
}
