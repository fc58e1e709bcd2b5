// ARGS: run $FILE --entry k
// EXIT: 0
// Function-like macros with C's rules: nested arguments, rescanning, a macro not expanded
// inside itself, a function-like name without `(` left alone, `#` and `##`.
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define SQ(x) ((x) * (x))
#define TWICE(f, x) f(f(x))
#define CAT(a, b) a ## b
#define CALL(f) f
#define EMPTY
#define PAIR(a, b) (a + b)
long k(void) {
    long value1 = 10;
    long x = 3;
    long SQ = 2;
    long r = MIN(SQ(3), MIN(100, 7 * 2)) + CAT(value, 1);   // 9 + 10
    r += TWICE(SQ, 2);                                       // 16
    r += CALL(SQ)(2) + SQ;                                   // 4 + 2
#define x (x + 1)
    r += x;                                                  // x + 1 = 4
#undef x
    r += PAIR((1, 2), EMPTY 5) + CAT(, 3) + CAT(1, 0);      // 7 + 3 + 10
    return r;                                                // 65
}
