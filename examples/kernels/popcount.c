// ENTRY: popcount
// DESC: population counts of 64-bit words built from the input by shifts/or/xor; two methods, returns their total
// RUN: -D n=100000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=999
// BENCH: -D n=20000000

#include <stdint.h>

// Kernighan: each step clears the lowest set bit.
int pop_kernighan(int64_t v)
{
    int c = 0;
    while (v != 0) {
        v &= v - 1;
        c++;
    }
    return c;
}

// Bit by bit.
int pop_shift(int64_t v)
{
    int c = 0;
    for (; v != 0; v >>= 1)
        c += (int)(v & 1);
    return c;
}

// The words are non-negative (below 2^62) so right shifts are well defined.
long popcount(int n, int64_t a[n], int cnt[n])
{
    long total = 0;
    for (int i = 0; i < n; i++) {
        int64_t x = a[i];
        int64_t w = (x << 48) | ((x ^ i) << 24) | (x * 131 + i) | ((int64_t)(i % 1000) << 36);
        cnt[i] = pop_kernighan(w);
        total += cnt[i] + pop_shift(w);
    }
    return total;
}
