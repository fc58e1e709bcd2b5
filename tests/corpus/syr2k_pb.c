// ENTRY: kernel_syr2k
// DESC: symmetric rank-2k update written in benchmark-suite style: its own header of sizes
// DESC: and macros (#include "...", #if/#ifdef/#elif, function-like macros, a typedef),
// DESC: a static kernel, counters declared at the top, a triangular nest
// SCOPS: 1
// RUN: -D n=120 -D m=100 -D alpha=1.5 -D beta=1.2
// TEST: -D n=0 -D m=0 -D alpha=1.5 -D beta=1.2
// TEST: -D n=1 -D m=2 -D alpha=1.5 -D beta=1.2
// TEST: -D n=2 -D m=1 -D alpha=-0.5 -D beta=2.0
// TEST: -D n=17 -D m=13 -D alpha=1.5 -D beta=1.2
#include "syr2k_pb.h"

static void kernel_syr2k(int n, int m,
                         DATA_TYPE alpha, DATA_TYPE beta,
                         DATA_TYPE C[n][n], DATA_TYPE A[n][m], DATA_TYPE B[n][m])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < _PB_N; i++) {
    for (j = 0; j <= i; j++)
      IDX(C, i, j) *= beta;
    for (k = 0; k < _PB_M; k++)
      for (j = 0; j <= i; j++)
        IDX(C, i, j) += IDX(A, j, k) * alpha * IDX(B, i, k) + IDX(B, j, k) * alpha * IDX(A, i, k);
  }
#pragma endscop
}
