// ENTRY: scan
// DESC: inclusive prefix sum of int64 values with the work-efficient Brent-Kung up-sweep/down-sweep
// RUN: -D n=1000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=1000
// BENCH: -D n=20000000

#include <stdint.h>

// out[i] = a[0] + ... + a[i]; works for any n, not only powers of two.
void scan(int n, int64_t a[n], int64_t out[n])
{
    for (int i = 0; i < n; i++)
        out[i] = a[i];
    // up-sweep: out[i] with (i+1) a multiple of 2d becomes a block sum of length 2d
    int d = 1;
    while (d < n) {
        for (int i = 2 * d - 1; i < n; i += 2 * d)
            out[i] += out[i - d];
        d <<= 1;
    }
    // down-sweep: fill in the remaining prefixes from the coarsest stride down
    for (d >>= 2; d >= 1; d >>= 1)
        for (int i = 3 * d - 1; i < n; i += 2 * d)
            out[i] += out[i - d];
}
