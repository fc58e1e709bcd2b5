// ENTRY: float_chain
// DESC: calibration micro-kernel: two dependent chains of double multiply-adds (float class)
// RUN: -D n=3000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=17
double float_chain(int n)
{
    double s = 0.0, t = 1.0;
    for (int i = 0; i < n; i++) {
        s = s * 0.999 + t;
        t = t * 1.0000001 - 1e-9;
    }
    return s + t;
}
