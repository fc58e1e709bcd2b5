// ARGS: run $FILE --entry work -D i=010
// EXIT: 0
// -D i=010 is octal 8 for a parameter, as for a #define (C semantics).
long work(int i) {
    return i;
}
