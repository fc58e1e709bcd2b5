// sqrt needs #include <math.h>.
void k(int n, double A[n]) {
    A[0] = sqrt(A[0]);
}
