// ARGS: run $FILE --entry k
// EXIT: 0
// Character constants are `int`s with their ASCII codes, in code and in `#if`: 'A' is 65,
// '\n' 10, '\0' 0, '\x7f' 127, '\101' 65, '\'' 39, '\\' 92.
#if 'A' == 65 && '\n' == 10
#define SEVEN 7
#endif
long k(void) {
    char c = 'A';
    return c * 1000000L + '\n' * 10000 + '\x7f' * 10 + '\0' + ('\101' == 'A') + ('\'' == 39)
        + ('\\' == 92) + SEVEN - 10;
}
