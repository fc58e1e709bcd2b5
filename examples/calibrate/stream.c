// ENTRY: stream
// DESC: calibration micro-kernel: a contiguous multiply-add over two large arrays (streaming loads beyond the caches)
// RUN: -D n=8000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=19
double stream(int n, double A[n], double B[n])
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i + 3 < n; i += 4) {
        s0 += A[i] * B[i];
        s1 += A[i + 1] * B[i + 1];
        s2 += A[i + 2] * B[i + 2];
        s3 += A[i + 3] * B[i + 3];
    }
    for (; i < n; i++)
        s0 += A[i] * B[i];
    return (s0 + s1) + (s2 + s3);
}
