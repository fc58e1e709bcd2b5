// ARGS: skel $FILE --entry work --over 0..10 --skeleton chunk --tau 2 --threads 18446744073709551615
// EXIT: 2
// An absurd thread count is rejected before anything runs.
long work(int i) {
    return i;
}
