// ARGS: run $FILE --entry k -D z=0.0 --mode jit
// EXIT: 0
// NaN sign and payload are unspecified (the JIT folds 0.0/0.0 to 0x7ff8..., x86 gives
// 0xfff8...): checksums canonicalise NaNs, so every mode prints the same checksum.
void k(double z, double A[3], float B[2]) {
    A[0] = 0.0 / 0.0;
    A[1] = z / z;
    A[2] = -(z / z);
    B[0] = 0.0f / 0.0f;
    B[1] = (float)(z / z);
}
