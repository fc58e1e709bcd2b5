// Stray and misplaced conditionals, bad #if expressions, #error, an unterminated #if.
#endif
#else
#ifdef
#endif
#ifdef X
#else
#elif 1
#endif
#if 1 / 0
#endif
#if 1 << 64
#endif
#if 1.5
#endif
#if (1 +
#endif
#if defined(
#endif
#if 1
#error stop here
#endif
#define A 1
#define A 2
#undef
#line 3
#if 1
int f(void) { return 0; }
