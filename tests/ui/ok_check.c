// EXIT: 0
// A valid file: `check` reports the functions it found.
#include <math.h>
double norm(int n, double x[n]) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}
void scale(int n, double x[n]) {
    double r = norm(n, x);
    for (int i = 0; i < n; i++)
        x[i] /= r;
}
