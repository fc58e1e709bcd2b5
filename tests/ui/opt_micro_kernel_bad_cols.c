// ARGS: run $FILE --entry gemm --mode opt -D NI=2 -D NJ=2 -D NK=2 --micro-kernel-cols 65
// EXIT: 2
// Micro-kernel columns are 0 (none) or 2 to 64: a usage error, checked before anything runs.
void gemm(int NI, int NJ, int NK, double C[NI][NJ], double A[NI][NK], double B[NK][NJ]) {
    for (int i = 0; i < NI; i++)
        for (int k = 0; k < NK; k++)
            for (int j = 0; j < NJ; j++)
                C[i][j] += A[i][k] * B[k][j];
}
