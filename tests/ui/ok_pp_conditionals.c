// ARGS: run $FILE --entry k -D MODE=2
// EXIT: 0
// #if with C's integer operators after expansion, defined, #elif, #else, #undef, nesting;
// skipped regions are not lexed.
#define N 4
#if N * 2 > 7 && defined(N) && !defined UNDEFINED_NAME && (1 ? 1 : 1 / 0)
#define A 1
#else
#define A 100
#endif
#if MODE == 1
#define B 10
#elif MODE == 2
# if UNKNOWN_IDENTIFIER + 0 == 0 && (-1 >> 1) == -1 && (7 % 4 << 2) == 12
#  define B 20
# endif
#else
  this is never lexed: 'unterminated "quote @ $ `
#endif
#ifndef A
#error not reached
#endif
#undef N
#ifdef N
#define C 1000
#else
#define C 300
#endif
long k(void) {
    return A + B + C + MODE; // 1 + 20 + 300 + 2
}
