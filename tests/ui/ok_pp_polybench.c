// ARGS: check $FILE
// EXIT: 0
// A PolyBench/C kernel as written: its own header (included twice: the include guard
// works), function-like macros, conditionals, `static`, #pragma scop.
#include <math.h>
#include "fixtures/pp/gemm.h"
#include "fixtures/pp/gemm.h"

static
void kernel_gemm(int ni, int nj, int nk,
                 DATA_TYPE alpha,
                 DATA_TYPE beta,
                 DATA_TYPE POLYBENCH_2D(C,NI,NJ,ni,nj),
                 DATA_TYPE POLYBENCH_2D(A,NI,NK,ni,nk),
                 DATA_TYPE POLYBENCH_2D(B,NK,NJ,nk,nj))
{
  int i, j, k;
#pragma scop
  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NJ; j++)
      C[i][j] *= beta;
    for (k = 0; k < _PB_NK; k++) {
      for (j = 0; j < _PB_NJ; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
  }
#pragma endscop
}
