// ARGS: skel $FILE --entry work --over 10..x --skeleton chunk --tau 2
// EXIT: 2
long work(int i) {
    return i;
}
