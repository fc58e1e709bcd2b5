// Function-like macros are bounded too: exponential growth through arguments.
#define D(x) x x x x
int f(int x) { return D(D(D(D(D(D(D(D(D(D(D(x))))))))))); }
