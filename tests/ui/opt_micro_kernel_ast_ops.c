// ARGS: explain $FILE --entry gemm -D NI=9 -D NJ=10 -D NK=7 --tile-sizes 128 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2 --register-tile-ast-ops 1000
// EXIT: 0
// The gemm of opt_micro_kernel.c with a bound of isl operations too small for generating
// its nest with register tiles: the micro-kernel is dropped first, then the plain register
// tile, the notes say so, and the nest is generated without them.
#define NI 64
#define NJ 64
#define NK 64
void gemm(double alpha, double beta, double C[NI][NJ], double A[NI][NK], double B[NK][NJ]) {
    for (int i = 0; i < NI; i++) {
        for (int j = 0; j < NJ; j++)
            C[i][j] *= beta;
        for (int k = 0; k < NK; k++)
            for (int j = 0; j < NJ; j++)
                C[i][j] += alpha * A[i][k] * B[k][j];
    }
}
