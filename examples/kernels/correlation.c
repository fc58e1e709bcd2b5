// ENTRY: correlation
// DESC: Pearson correlation matrix of m variables over n observations (stddev <= 0.1 replaced by 1.0)
// RUN: -D m=200 -D n=240
// TEST: -D m=0 -D n=0
// TEST: -D m=1 -D n=1
// TEST: -D m=2 -D n=3
// TEST: -D m=19 -D n=31
// BENCH: -D m=1200 -D n=1400

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
        // near-constant columns would blow up the normalisation
        stddev[j] = sd <= EPS ? 1.0 : sd;
    }
    // centre and scale so that corr = data^T * data
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
