// ENTRY: floyd_warshall
// DESC: all-pairs shortest paths (Floyd-Warshall) on an integer weight matrix; returns the sum of finite distances
// RUN: -D n=160
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=43
// BENCH: -D n=1500

#define NOEDGE 1000000

// Input weights are random in [0,100]; weights divisible by 7 are treated
// as missing edges.  NOEDGE + NOEDGE still fits comfortably in an int.
long floyd_warshall(int n, int path[n][n])
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                path[i][j] = 0;
            else if (path[i][j] % 7 == 0)
                path[i][j] = NOEDGE;
        }
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++) {
            int dik = path[i][k];
            for (int j = 0; j < n; j++)
                path[i][j] = min(path[i][j], dik + path[k][j]);
        }
    long total = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (path[i][j] < NOEDGE)
                total += path[i][j];
    return total;
}
