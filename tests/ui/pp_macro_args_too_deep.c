// Macro calls nested in arguments more than 64 deep.
#define I(x) x
int f(int x) { return I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(I(x)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))); }
