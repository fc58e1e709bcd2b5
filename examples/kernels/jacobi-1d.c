// ENTRY: jacobi_1d
// DESC: time-stepped 3-point Jacobi smoothing in single precision, ping-ponging between A and B
// RUN: -D tsteps=500 -D n=4000
// TEST: -D tsteps=0 -D n=0
// TEST: -D tsteps=1 -D n=1
// TEST: -D tsteps=2 -D n=2
// TEST: -D tsteps=7 -D n=101
// BENCH: -D tsteps=10000 -D n=100000

void jacobi_1d(int tsteps, int n, float A[n], float B[n])
{
    for (int t = 0; t < tsteps; t++) {
        for (int i = 1; i < n - 1; i++)
            B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3;
        for (int i = 1; i < n - 1; i++)
            A[i] = (B[i - 1] + B[i] + B[i + 1]) / 3;
    }
}
