// ARGS: run $FILE --entry gemm --mode opt --no-versions -D NI=9 -D NJ=10 -D NK=7 --micro-kernel-cols 4 --micro-kernel-rows 2 --register-tile 2 --register-tile-ast-ops 1000 -D alpha=1.5 -D beta=1.2 --init random:5
// EXIT: 0
// The gemm of opt_micro_kernel_run.c, its register tiles given up for the bound of isl
// operations (opt_micro_kernel_ast_ops.c): the checksums are those of opt_micro_kernel_run,
// the interpreter's, at sizes that are not multiples of the tiles.
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
