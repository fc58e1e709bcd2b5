// ARGS: skel $FILE --entry work --over 0..10 --skeleton chunk --tau 2
// EXIT: 1
// `maxit` is neither the element index nor given with -D.
long work(int i, int maxit) {
    return i * maxit;
}
