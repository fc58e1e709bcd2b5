/* Tessera's C prelude: printed at the top of every `tessera emit --target c|openmp` file and
   force-included (gcc -include tests/gcc-prelude.h) when example kernels are compiled as plain
   C for the gcc oracle. Tessera's integer builtins min/max, with its semantics (each argument evaluated once,
   compared in the usual arithmetic conversion of the two). */
#ifndef TESSERA_PRELUDE_H
#define TESSERA_PRELUDE_H
#define min(a, b) ({ __typeof__((a) + (b)) _tmin_a = (a), _tmin_b = (b); _tmin_a < _tmin_b ? _tmin_a : _tmin_b; })
#define max(a, b) ({ __typeof__((a) + (b)) _tmax_a = (a), _tmax_b = (b); _tmax_a > _tmax_b ? _tmax_a : _tmax_b; })

/* fmin/fmax with Tessera's semantics (docs/language.md, section 6: IEEE 754-2019
   minimumNumber/maximumNumber: a NaN operand is ignored unless both are NaN, and -0 < +0),
   where glibc leaves the sign of a zero result to the order of the operands. */
#include <math.h>
#include <string.h>
#include <stdint.h>
static inline double tessera_fmin(double a, double b) {
    if (a != a) return b;
    if (b != b || a < b) return a;
    if (b < a) return b;
    uint64_t x, y; memcpy(&x, &a, 8); memcpy(&y, &b, 8); x |= y; memcpy(&a, &x, 8); return a;
}
static inline double tessera_fmax(double a, double b) {
    if (a != a) return b;
    if (b != b || a > b) return a;
    if (b > a) return b;
    uint64_t x, y; memcpy(&x, &a, 8); memcpy(&y, &b, 8); x &= y; memcpy(&a, &x, 8); return a;
}
static inline float tessera_fminf(float a, float b) {
    if (a != a) return b;
    if (b != b || a < b) return a;
    if (b < a) return b;
    uint32_t x, y; memcpy(&x, &a, 4); memcpy(&y, &b, 4); x |= y; memcpy(&a, &x, 4); return a;
}
static inline float tessera_fmaxf(float a, float b) {
    if (a != a) return b;
    if (b != b || a > b) return a;
    if (b > a) return b;
    uint32_t x, y; memcpy(&x, &a, 4); memcpy(&y, &b, 4); x &= y; memcpy(&a, &x, 4); return a;
}
#define fmin(a, b) tessera_fmin((a), (b))
#define fmax(a, b) tessera_fmax((a), (b))
#define fminf(a, b) tessera_fminf((a), (b))
#define fmaxf(a, b) tessera_fmaxf((a), (b))
#endif /* TESSERA_PRELUDE_H */
