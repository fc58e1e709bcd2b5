// ARGS: emit $FILE --entry k --target wasm
// EXIT: 2
void k(int n, double A[n]) {
    A[0] = 1.0;
}
