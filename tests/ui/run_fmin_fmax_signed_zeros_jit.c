// ARGS: run $FILE --entry k -D z=0.0 --mode jit
// EXIT: 0
// fmin/fmax are IEEE 754-2019 minimumNumber/maximumNumber: -0 < +0, a NaN operand is
// ignored. A = [-0, -0, +0, +0, 1, 1, -0, +0], the same checksum in every mode (it was three
// different answers from the interpreter, the JIT and glibc).
#include <math.h>
void k(double z, double A[8], float B[4]) {
    double nz = -z;
    double nan = z / z;
    A[0] = fmin(z, nz);
    A[1] = fmin(nz, z);
    A[2] = fmax(z, nz);
    A[3] = fmax(nz, z);
    A[4] = fmin(nan, 1.0);
    A[5] = fmax(1.0, nan);
    A[6] = fmin(0.0, -0.0);
    A[7] = fmax(-0.0, 0.0);
    B[0] = fminf((float)z, (float)nz);
    B[1] = fmaxf((float)nz, (float)z);
    B[2] = fminf((float)nz, (float)z);
    B[3] = fmaxf((float)z, (float)nz);
}
