// ENTRY: mm3
// DESC: three matrix products: E = A*B, F = C*D, G = E*F
// RUN: -D ni=100 -D nj=110 -D nk=120 -D nl=130 -D nm=140
// TEST: -D ni=0 -D nj=0 -D nk=0 -D nl=0 -D nm=0
// TEST: -D ni=1 -D nj=1 -D nk=2 -D nl=1 -D nm=2
// TEST: -D ni=5 -D nj=7 -D nk=11 -D nl=13 -D nm=3
// BENCH: -D ni=700 -D nj=800 -D nk=900 -D nl=1000 -D nm=1100

// Plain i-j-k product of an n x m matrix X and an m x p matrix Y into Z.
void matprod(int n, int m, int p, double Z[n][p], double X[n][m], double Y[m][p])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p; j++) {
            double s = 0.0;
            for (int k = 0; k < m; k++)
                s += X[i][k] * Y[k][j];
            Z[i][j] = s;
        }
}

// (C identifiers cannot start with a digit, so the entry is called mm3.)
void mm3(int ni, int nj, int nk, int nl, int nm,
         double E[ni][nj], double A[ni][nk], double B[nk][nj],
         double F[nj][nl], double C[nj][nm], double D[nm][nl],
         double G[ni][nl])
{
    matprod(ni, nk, nj, E, A, B);
    matprod(nj, nm, nl, F, C, D);
    matprod(ni, nj, nl, G, E, F);
}
