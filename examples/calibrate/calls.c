// ENTRY: calls
// DESC: calibration micro-kernel: a doubly recursive function on data-dependent arguments (call class)
// RUN: -D n=20000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=9
int fibr(int k)
{
    if (k < 2)
        return k;
    return fibr(k - 1) + fibr(k - 2);
}

long calls(int n, double A[n])
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += fibr((int)(A[i] * 12.0));
    return s;
}
