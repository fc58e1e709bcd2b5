// ARGS: run $FILE --entry k -D N=010
// EXIT: 0
// -D N=010 overrides a #define: octal 8, as for a parameter (run_define_octal.c).
#define N 3
long k(void) {
    return N;
}
