// ENTRY: fib
// DESC: naive doubly recursive Fibonacci (fib(0)=0, fib(1)=1) (skeleton benchmark)
// RUN: -D n=27
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=10
// BENCH: -D n=42

long fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}
