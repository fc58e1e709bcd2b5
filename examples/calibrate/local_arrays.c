// ENTRY: local_arrays
// DESC: calibration micro-kernel: a small local array per iteration (alloc and scalar classes)
// RUN: -D n=300000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=9
double local_arrays(int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double t[4];
        t[0] = i;
        t[1] = t[0] * 0.5;
        t[2] = t[1] + t[0];
        t[3] = t[2] - 1.0;
        s += t[3];
    }
    return s;
}
