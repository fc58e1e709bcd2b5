/* Force-included (gcc -include) when example kernels are compiled as plain C for the gcc
   oracle: Tessera's integer builtins min/max, with its semantics (each argument evaluated once,
   compared in the usual arithmetic conversion of the two). */
#define min(a, b) ({ __typeof__((a) + (b)) _tmin_a = (a), _tmin_b = (b); _tmin_a < _tmin_b ? _tmin_a : _tmin_b; })
#define max(a, b) ({ __typeof__((a) + (b)) _tmax_a = (a), _tmax_b = (b); _tmax_a > _tmax_b ? _tmax_a : _tmax_b; })
