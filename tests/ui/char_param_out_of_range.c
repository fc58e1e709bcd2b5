// ARGS: run $FILE --entry k -D c=200
// EXIT: 2
// A `char` parameter takes -128..127 from -D; 200 is not a `char` value (it is not wrapped).
int k(char c) {
    return c;
}
