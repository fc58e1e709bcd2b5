// ENTRY: hist
// DESC: two histograms of hashed int32 keys (shifts, xor, complement, and signed %); returns the fullest bin of h
// RUN: -D n=1000000 -D nbins=64
// TEST: -D n=0 -D nbins=0
// TEST: -D n=1 -D nbins=1
// TEST: -D n=2 -D nbins=3
// TEST: -D n=5000 -D nbins=37
// BENCH: -D n=50000000 -D nbins=256

#include <stdint.h>

// Keys are in [0,100]; every intermediate value stays non-negative and far
// below 2^31.
int hash_key(int32_t x, int i)
{
    int h = x;
    h ^= h << 7;
    h ^= h >> 3;
    h = (h * 37 + (i & 15)) ^ (~i & 255);
    return h | ((i >> 4) & 1);
}

int hist(int n, int nbins, int32_t a[n], int32_t h[nbins], int32_t g[nbins])
{
    if (nbins <= 0)
        return -1;
    for (int b = 0; b < nbins; b++) {
        h[b] = 0;
        g[b] = 0;
    }
    for (int i = 0; i < n; i++) {
        h[hash_key(a[i], i) % nbins]++;
        // C's % truncates towards zero: rem lies in [-6, 6]
        int rem = (a[i] - 50) % 7;
        g[(rem + 7) % nbins] += 1;
    }
    int best = 0;
    for (int b = 1; b < nbins; b++)
        if (h[b] > h[best])
            best = b;
    return best;
}
