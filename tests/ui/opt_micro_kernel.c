// ARGS: explain $FILE --entry gemm -D NI=9 -D NJ=10 -D NK=7 --tile-sizes 128 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2
// EXIT: 0
// The PolyBench gemm as written there (i, k, j order): the scaling of C is split into its
// own band, the product's band gets a 2 x 4 register micro-kernel (k innermost, full
// tiles unrolled), and promotion keeps the 8 accumulators in locals across the k loop.
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
