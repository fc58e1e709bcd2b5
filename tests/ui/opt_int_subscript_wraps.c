// ARGS: run $FILE --entry wrap -D n=3 --mode opt
// EXIT: 0
// `i * 1073741824 * 4` wraps to 0 in `int` arithmetic, so every iteration writes `A[0]`
// (what the interpreter does). isl cannot prove the subscript within `int`, so the optimiser
// must not compute it in 64 bits (which would give `A[4294967296]` and an error).
void wrap(int n, double A[n]) {
    for (int i = 0; i < n; i++)
        A[i * 1073741824 * 4] = 1.0;
}
