// ENTRY: newton_sqrt
// DESC: Newton iterations for square roots: double (do/while) and integer (while); returns the total iteration count
// RUN: -D n=60000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=500
// BENCH: -D n=10000000

#include <math.h>

// y[i] = sqrt(a) by Newton's method; returns the number of iterations.
// Starting at or above sqrt(a), the iterates decrease until rounding stops
// them; we stop at the first step that does not decrease.
int newton_root(int n, double y[n], int i, double a)
{
    if (a <= 0.0) {
        y[i] = 0.0;
        return 0;
    }
    double g = a > 1.0 ? a : 1.0;
    double prev;
    int it = 0;
    do {
        prev = g;
        g = 0.5 * (g + a / g);
        it++;
    } while (g < prev && it < 200);
    y[i] = fmin(g, prev);
    return it;
}

// r[i] = floor(sqrt(v)) for v >= 0 by integer Newton iteration; returns
// the number of iterations.
int isqrt_into(int n, long r[n], int i, long v)
{
    if (v < 2) {
        r[i] = v;
        return 0;
    }
    long x = v;
    long y = (x + 1) / 2;
    int it = 0;
    while (y < x) {
        x = y;
        y = (x + v / x) / 2;
        it++;
    }
    r[i] = x;
    return it;
}

// y[i] = sqrt(1000 x[i]) by Newton, err[i] its distance from the library
// sqrt, r[i] = isqrt(floor(1e6 x[i])).
long newton_sqrt(int n, double x[n], double y[n], double err[n], long r[n])
{
    long total = 0;
    for (int i = 0; i < n; i++) {
        double a = 1000.0 * x[i];
        total += newton_root(n, y, i, a);
        err[i] = fabs(y[i] - sqrt(a));
        total += isqrt_into(n, r, i, (long)floor(1.0e6 * x[i]));
    }
    return total;
}
