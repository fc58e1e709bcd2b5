// Every independent error in the file is reported, not only the first.
void k(int n, double A[n]) {
    A[0] = undefined_a;
    A[1] = undefined_b;
    A[2] = unknown_fn(1);
}
