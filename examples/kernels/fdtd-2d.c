// ENTRY: fdtd_2d
// DESC: 2-D finite-difference time-domain (Yee) update of ex, ey, hz with a driven boundary row
// RUN: -D tmax=40 -D nx=160 -D ny=180
// TEST: -D tmax=0 -D nx=0 -D ny=0
// TEST: -D tmax=1 -D nx=1 -D ny=1
// TEST: -D tmax=2 -D nx=2 -D ny=3
// TEST: -D tmax=6 -D nx=23 -D ny=29
// BENCH: -D tmax=200 -D nx=2000 -D ny=2200

// fict[t] is the source value imposed on the row ey[0][*] at step t.
void fdtd_2d(int tmax, int nx, int ny, double ex[nx][ny], double ey[nx][ny],
             double hz[nx][ny], double fict[tmax])
{
    for (int t = 0; t < tmax; t++) {
        for (int j = 0; j < ny; j++)
            ey[0][j] = fict[t];
        // electric field from the curl of the magnetic field
        for (int i = 1; i < nx; i++)
            for (int j = 0; j < ny; j++)
                ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i - 1][j]);
        for (int i = 0; i < nx; i++)
            for (int j = 1; j < ny; j++)
                ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j - 1]);
        // magnetic field from the curl of the electric field
        for (int i = 0; i < nx - 1; i++)
            for (int j = 0; j < ny - 1; j++)
                hz[i][j] = hz[i][j] - 0.7 * (ex[i][j + 1] - ex[i][j] + ey[i + 1][j] - ey[i][j]);
    }
}
