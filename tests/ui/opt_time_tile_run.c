// ARGS: run $FILE --entry stencils --mode opt --no-versions --time-tile --tile-sizes 4 -D tsteps=7 -D n=13 --init random:5
// EXIT: 0
// Time tiling (--time-tile): jacobi-2d (two statements ping-ponging between A and B) tiled
// in time and space with tiles of 4, run in wavefronts of tiles on the pool, compiled by the
// JIT, at 7 time steps on a 13 x 13 grid (neither a multiple of the tiles); seidel-2d (one
// statement updated in place, a recurrence along `j`) in the same SCoP is tiled but not in
// time (no wavefront: it runs in order). The checksums are the interpreter's (checked when
// this expectation was written: `--mode interp` prints the same lines).
void stencils(int tsteps, int n, double A[n][n], double B[n][n], double C[n][n])
{
    for (int t = 0; t < tsteps; t++) {
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i - 1][j] + A[i + 1][j]);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i - 1][j] + B[i + 1][j]);
    }
    for (int t = 0; t < tsteps; t++)
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                C[i][j] = (C[i - 1][j - 1] + C[i - 1][j] + C[i - 1][j + 1] + C[i][j - 1] + C[i][j]
                           + C[i][j + 1] + C[i + 1][j - 1] + C[i + 1][j] + C[i + 1][j + 1]) / 9.0;
}
