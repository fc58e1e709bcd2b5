// ARGS: run $FILE --entry work -D i=3 --mode opt --threads 5000
// EXIT: 2
// 5000 threads took 22 s to start for a 4x4 gemm: above 1024 is rejected.
long work(int i) {
    return i;
}
