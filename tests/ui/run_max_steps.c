// ARGS: run $FILE --entry k -D n=1 --max-steps 1000
void k(int n, long A[n]) {
    while (1)
        A[0]++;
}
