// ENTRY: sumeuler
// DESC: sum of Euler's totient phi(k) for k = 1..n, phi computed by counting gcds (skeleton benchmark)
// RUN: -D n=800
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=100
// BENCH: -D n=10000

// Euclid's algorithm (a, b >= 0).
int gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// Per-element function: number of 1 <= j <= k coprime to k.
long totient(int k)
{
    long c = 0;
    for (int j = 1; j <= k; j++)
        if (gcd(j, k) == 1)
            c++;
    return c;
}

long sumeuler(int n)
{
    long s = 0;
    for (int k = 1; k <= n; k++)
        s += totient(k);
    return s;
}
