// ENTRY: kernel_gemm
// DESC: C = alpha*A*B + beta*C written as PolyBench/C writes it: counters declared at the top
// DESC: and reused, an element type through a macro, #pragma scop
// SCOPS: 1
// RUN: -D ni=60 -D nj=70 -D nk=80 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=0 -D nj=0 -D nk=0 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=1 -D nj=2 -D nk=1 -D alpha=1.5 -D beta=1.2
// TEST: -D ni=13 -D nj=7 -D nk=11 -D alpha=-0.5 -D beta=2.0
#include <math.h>
#define DATA_TYPE double

void kernel_gemm(int ni, int nj, int nk,
                 DATA_TYPE alpha,
                 DATA_TYPE beta,
                 DATA_TYPE C[ni][nj],
                 DATA_TYPE A[ni][nk],
                 DATA_TYPE B[nk][nj])
{
  int i, j, k;

#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++) {
      for (j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
  }
#pragma endscop
}
