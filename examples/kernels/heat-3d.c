// ENTRY: heat_3d
// DESC: explicit 7-point heat-equation stencil on an n^3 grid, ping-ponging between A and B
// RUN: -D tsteps=16 -D n=40
// TEST: -D tsteps=0 -D n=0
// TEST: -D tsteps=1 -D n=1
// TEST: -D tsteps=2 -D n=3
// TEST: -D tsteps=3 -D n=17
// BENCH: -D tsteps=50 -D n=160

// Diffusion coefficient 0.125 per axis (< 1/6), so the scheme is stable.
void heat_step(int n, double dst[n][n][n], double src[n][n][n])
{
    for (int i = 1; i < n - 1; i++)
        for (int j = 1; j < n - 1; j++)
            for (int k = 1; k < n - 1; k++) {
                double c = src[i][j][k];
                dst[i][j][k] = c
                    + 0.125 * (src[i + 1][j][k] - 2.0 * c + src[i - 1][j][k])
                    + 0.125 * (src[i][j + 1][k] - 2.0 * c + src[i][j - 1][k])
                    + 0.125 * (src[i][j][k + 1] - 2.0 * c + src[i][j][k - 1]);
            }
}

void heat_3d(int tsteps, int n, double A[n][n][n], double B[n][n][n])
{
    for (int t = 0; t < tsteps; t++) {
        heat_step(n, B, A);
        heat_step(n, A, B);
    }
}
