// ARGS: run $FILE --entry k
// EXIT: 0
// `char` values are promoted to `int` before any operator: 100 + 100 is 200 (in 8 bits it
// would wrap to -56), and only the store back into a `char` wraps: 200 * 1000 + -56.
int k(void) {
    char a = 100, b = 100;
    char s = a + b;
    return (a + b) * 1000 + s;
}
