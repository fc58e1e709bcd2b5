// ENTRY: quicksort
// DESC: recursive Hoare-partition quicksort of an int array; returns the number of out-of-order neighbours (0)
// RUN: -D n=200000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=1001
// BENCH: -D n=50000000

// Sorts a[lo..hi] (inclusive).  Recurses on the smaller part and loops on
// the larger one, so the recursion depth stays logarithmic.
void sort_range(int n, int lo, int hi, int a[n])
{
    while (lo < hi) {
        int pivot = a[lo + (hi - lo) / 2];
        int i = lo - 1, j = hi + 1;
        while (1) {
            do {
                i++;
            } while (a[i] < pivot);
            do {
                j--;
            } while (a[j] > pivot);
            if (i >= j)
                break;
            int t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        if (j - lo < hi - j) {
            sort_range(n, lo, j, a);
            lo = j + 1;
        } else {
            sort_range(n, j + 1, hi, a);
            hi = j;
        }
    }
}

int quicksort(int n, int a[n])
{
    sort_range(n, 0, n - 1, a);
    int bad = 0;
    for (int i = 0; i + 1 < n; i++)
        bad += a[i] > a[i + 1];
    return bad;
}
