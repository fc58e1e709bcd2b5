// Wrong argument counts, malformed definitions, an unterminated call.
#define F(a, b) ((a) + (b))
#define G() 1
#define H(x) # y
#define J(x, x) x
#define V(...) 1
#define P(x) ## x
#define Q(a, b) a ## b
int f(int n) {
    return F(1, 2, 3) + F(1) + G(2) + Q(+, /);
}
int g(void) { return F(1, (2
