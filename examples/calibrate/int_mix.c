// ENTRY: int_mix
// DESC: calibration micro-kernel: a chain of integer multiplies, adds, shifts and xors (int class)
// RUN: -D n=4000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=17
long int_mix(int n)
{
    long x = 88172645463325252;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005 + 1442695040888963407;
        x = x ^ (x >> 13);
        x = x + (x << 7);
    }
    return x;
}
