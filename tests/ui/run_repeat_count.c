// ARGS: run $FILE --entry k -D n=3 --mode jit --count --repeat 2
// EXIT: 2
// --count runs the entry once.
void k(int n, double a[n]) {
    for (int i = 0; i < n; i++)
        a[i] = 1.0;
}
