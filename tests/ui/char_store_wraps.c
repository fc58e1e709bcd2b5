// ARGS: run $FILE --entry k -D v=200
// EXIT: 0
// Storing an `int` into a `char` keeps its low 8 bits (as gcc does): 200 reads back as -56,
// in a scalar and in an array element.
int k(int v) {
    char c = v;
    char s[2];
    s[1] = v;
    return c == s[1] ? c : 0;
}
