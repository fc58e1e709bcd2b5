// ARGS: skel $FILE --entry work --over 0..10 --skeleton chunk --tau 2 --trace /dev/null/trace.txt
// EXIT: 2
// --trace is created before the run, so a bad path fails at once.
long work(int i) {
    return i;
}
