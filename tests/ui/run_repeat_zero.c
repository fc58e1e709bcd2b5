// ARGS: run $FILE --entry k -D n=3 --mode jit --repeat 0
// EXIT: 2
// --repeat takes 1 to 10000 calls.
void k(int n, double a[n]) {
    for (int i = 0; i < n; i++)
        a[i] = 1.0;
}
