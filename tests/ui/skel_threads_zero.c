// ARGS: skel $FILE --entry work --over 0..10 --skeleton chunk --tau 2 --threads 0
// EXIT: 2
// Zero threads: exit 2, as in run.
long work(int i) {
    return i;
}
