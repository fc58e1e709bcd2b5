// Character constants hold one ASCII character (above 127 the value would depend on the
// signedness of `char`), with C's escapes only.
int k(void) {
    int a = 'ab';
    int b = '\xff';
    int c = '\q';
    int d = '';
    return a + b + c + d;
}
