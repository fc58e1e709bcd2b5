// ARGS: run $FILE --entry work -D i=3 --mode opt --threads 0
// EXIT: 2
// Zero threads: exit 2, as in skel.
long work(int i) {
    return i;
}
