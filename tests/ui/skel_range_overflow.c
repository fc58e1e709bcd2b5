// ARGS: skel $FILE --entry work --over=-9223372036854775807..9223372036854775807 --skeleton chunk --tau 2
// EXIT: 2
// The range size overflowed (hi - lo); now a clear error.
long work(int i) {
    return i;
}
