// ENTRY: collatz
// DESC: total Collatz stopping time of 1..n (data-dependent while loops on long); returns the sum
// RUN: -D n=30000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=300
// BENCH: -D n=10000000

// Number of steps for v to reach 1 under v -> v/2 (even), 3v+1 (odd).
int steps(long v)
{
    int s = 0;
    while (v != 1) {
        if ((v & 1) == 0)
            v >>= 1;
        else
            v = 3 * v + 1;
        s++;
    }
    return s;
}

long collatz(int n)
{
    long total = 0;
    for (int k = 1; k <= n; k++)
        total += steps(k);
    return total;
}
