// ARGS: run $FILE --entry fill -D n=300 --mode opt --threads 2 --tile-sizes 8,8
// A failing guard inside a loop that the optimiser runs in parallel (the bounds proof fails
// for `j <= n`): the error is the one of the first failing iteration in loop order, whatever
// the schedule, with the array, the index and the location.
void fill(int n, double A[n][n]) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= n; j++)
            A[i][j] = i + j;
}
