// ENTRY: dcsum_all
// DESC: recursive divide-and-conquer sum of a long array (the array is passed down the recursion)
// RUN: -D n=1000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=777
// BENCH: -D n=50000000

// Sum of a[lo..hi-1]; small ranges are summed directly.
long dcsum(int n, int lo, int hi, long a[n])
{
    if (hi - lo <= 8) {
        long s = 0;
        for (int i = lo; i < hi; i++)
            s += a[i];
        return s;
    }
    int mid = lo + (hi - lo) / 2;
    return dcsum(n, lo, mid, a) + dcsum(n, mid, hi, a);
}

long dcsum_all(int n, long a[n])
{
    return dcsum(n, 0, n, a);
}
