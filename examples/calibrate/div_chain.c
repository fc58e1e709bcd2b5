// ENTRY: div_chain
// DESC: calibration micro-kernel: a dependent chain of double divisions and square roots (math class)
// RUN: -D n=1000000
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=17
#include <math.h>
double div_chain(int n)
{
    double x = 1.5;
    for (int i = 0; i < n; i++)
        x = 1.0 / (x + 1.0) + sqrt(x);
    return x;
}
