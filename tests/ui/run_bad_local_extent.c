// ARGS: run $FILE --entry k -D n=2 -D m=-1
void k(int n, int m, double A[n]) {
    double tmp[m];
    A[0] = 1.0;
}
