// ARGS: run $FILE --entry work -D i=3 -D i=4
// EXIT: 2
// A repeated -D for the same name silently took the last; now an error.
long work(int i) {
    return i;
}
