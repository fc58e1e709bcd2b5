// ENTRY: sieve
// DESC: sieve of Eratosthenes over a bool array of n+1 flags; returns the number of primes <= n
// RUN: -D n=1000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=1000
// BENCH: -D n=200000000

#include <stdbool.h>

int sieve(int n, bool isp[n + 1])
{
    for (int i = 0; i <= n; i++)
        isp[i] = i >= 2;
    for (int p = 2; (long)p * p <= n; p++) {
        if (!isp[p])
            continue;
        for (int q = p * p; q <= n; q += p)
            isp[q] = false;
    }
    int count = 0;
    for (int i = 0; i <= n; i++)
        if (isp[i])
            count++;
    return count;
}
