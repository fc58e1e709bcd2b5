// ARGS: run $FILE --entry correlation -D m=2 -D n=3 --mode opt --tile-sizes 4 --register-tile 4 --register-tile-budget 100000 --reverse-parallel
// EXIT: 0
// The correlation kernel with tiles of 4 and register tiles of 4 (over any budget): the
// register tile's strip counter of the column-mean band takes one value per cache tile, so
// isl emits no loop for it. A `parallel` mark on that member used to land on the `j` loop
// inside, which also runs `fn = ...` (a statement of the same band) before the means read
// it; with `--reverse-parallel` the means then read `fn` before it was set. Marks now skip
// such members. The checksums are the interpreter's (`--mode interp`).
#include <math.h>

#define EPS 0.1

void correlation(int m, int n, double data[n][m], double corr[m][m],
                 double mean[m], double stddev[m])
{
    double fn = n > 0 ? (double)n : 1.0;
    for (int j = 0; j < m; j++) {
        double s = 0.0;
        for (int i = 0; i < n; i++)
            s += data[i][j];
        mean[j] = s / fn;
    }
    for (int j = 0; j < m; j++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) {
            double d = data[i][j] - mean[j];
            s += d * d;
        }
        double sd = sqrt(s / fn);
        stddev[j] = sd <= EPS ? 1.0 : sd;
    }
    double rootn = sqrt(fn);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            data[i][j] = (data[i][j] - mean[j]) / (rootn * stddev[j]);
    for (int a = 0; a < m; a++) {
        corr[a][a] = 1.0;
        for (int b = a + 1; b < m; b++) {
            double s = 0.0;
            for (int i = 0; i < n; i++)
                s += data[i][a] * data[i][b];
            corr[a][b] = s;
            corr[b][a] = s;
        }
    }
}
