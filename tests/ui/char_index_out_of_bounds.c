// ARGS: run $FILE --entry k -D n=4 --init zeros
// EXIT: 1
// A `char` subscript is its promoted value: 200 stored into a `char` is -56, out of bounds.
void k(int n, char s[n], int out[n]) {
    char i = 200;
    out[0] = s[i];
}
