// ARGS: run $FILE --entry k -D n=3
double f(double x) {
    if (x > 10.0)
        return x;
}
void k(int n, double A[n]) {
    A[0] = f(1.0);
}
