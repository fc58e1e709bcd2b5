// A typedef name as a variable, a function, a value; redefined differently; non-scalar.
typedef double T;
typedef float T;
typedef int V[10];
typedef double *P;
void f(int n) {
    int T = 1;
    typedef int W;
    n = T + 1;
}
void T(void) {}
