// ARGS: skel $FILE --entry row --over 0..8 --skeleton chunk --tau 2 -D n=4 --threads 2
// A fault inside one task of a parallel skeleton becomes an error naming the array and index.
double row(int i, int n) {
    double A[4];
    return A[i];
}
