// ARGS: run $FILE --entry k -D n=4 -D m=3
void k(int n, int m, double A[n][m]) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            A[i][j] = i + j;
}
