// ARGS: run $FILE --entry work -D i=3 --out /dev/null/out
// EXIT: 2
// --out is checked (created) before the kernel runs.
long work(int i) {
    return i;
}
