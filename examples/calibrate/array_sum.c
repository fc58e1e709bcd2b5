// ENTRY: array_sum
// DESC: calibration micro-kernel: a strided walk over a large array, one load per element (array and guard classes)
// RUN: -D n=2000000 -D s=17
// TEST: -D n=0 -D s=1
// TEST: -D n=1 -D s=3
// TEST: -D n=23 -D s=5
double array_sum(int n, int s, double A[n])
{
    double acc = 0.0;
    int j = 0;
    for (int i = 0; i < n; i++) {
        acc += A[j];
        j += s;
        if (j >= n)
            j -= n;
    }
    return acc;
}
