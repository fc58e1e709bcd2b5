// ENTRY: branches
// DESC: calibration micro-kernel: an unpredictable branch per element on random data (guard class)
// RUN: -D n=2000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=23
int branches(int n, double A[n])
{
    int c = 0;
    for (int i = 0; i < n; i++) {
        if (A[i] > 0.5)
            c += 3;
        else
            c -= 1;
    }
    return c;
}
