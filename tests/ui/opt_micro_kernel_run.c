// ARGS: run $FILE --entry gemm --mode opt --no-versions -D NI=9 -D NJ=10 -D NK=7 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2 -D alpha=1.5 -D beta=1.2 --init random:5
// EXIT: 0
// The gemm of opt_micro_kernel.c run with its 2 x 4 micro-kernel at sizes that are not
// multiples of the tiles: the checksums are the interpreter's (checked when this expectation
// was written: `--mode interp` prints the same lines).
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
