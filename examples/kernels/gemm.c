// ENTRY: gemm
// DESC: C = alpha*A*B + beta*C (BLAS level 3 general matrix multiply)
// RUN: -D ni=160 -D nj=180 -D nk=200 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=0 -D nj=0 -D nk=0 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=1 -D nj=2 -D nk=1 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=7 -D nj=13 -D nk=5 -D alpha=-0.5 -D beta=2.0
// TEST: -D ni=33 -D nj=31 -D nk=37 -D alpha=1.5 -D beta=1.2
// BENCH: -D ni=1000 -D nj=1100 -D nk=1200 -D alpha=1.5 -D beta=1.2

void gemm(int ni, int nj, int nk, double alpha, double beta,
          double C[ni][nj], double A[ni][nk], double B[nk][nj])
{
    for (int i = 0; i < ni; i++) {
        for (int j = 0; j < nj; j++)
            C[i][j] *= beta;
        for (int k = 0; k < nk; k++) {
            double a = alpha * A[i][k];
            for (int j = 0; j < nj; j++)
                C[i][j] += a * B[k][j];
        }
    }
}
