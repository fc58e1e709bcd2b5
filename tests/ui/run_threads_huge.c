// ARGS: run $FILE --entry work -D i=3 --mode opt --threads 18446744073709551615
// EXIT: 2
// An absurd thread count is rejected before anything runs (it used to hang).
long work(int i) {
    return i;
}
