// ARGS: explain $FILE --entry k --tile-sizes 0,x
// EXIT: 2
void k(int n, double A[n]) {
    for (int i = 0; i < n; i++)
        A[i] = 1.0;
}
