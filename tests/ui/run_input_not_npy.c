// ARGS: run $FILE --entry k -D n=3 --input A=tests/ui/run_input_not_npy.c
// EXIT: 2
void k(int n, double A[n]) {
    A[0] = 1.0;
}
