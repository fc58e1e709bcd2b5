// ENTRY: covariance
// DESC: sample covariance matrix of m variables over n observations (data is centred in place)
// RUN: -D m=200 -D n=240
// TEST: -D m=0 -D n=0
// TEST: -D m=1 -D n=1
// TEST: -D m=2 -D n=3
// TEST: -D m=19 -D n=31
// BENCH: -D m=1200 -D n=1400

void covariance(int m, int n, double data[n][m], double cov[m][m], double mean[m])
{
    // guards for n = 0 (no mean) and n = 1 (no unbiased estimate)
    double fn = n > 0 ? (double)n : 1.0;
    double denom = n > 1 ? (double)(n - 1) : 1.0;
    for (int j = 0; j < m; j++) {
        double s = 0.0;
        for (int i = 0; i < n; i++)
            s += data[i][j];
        mean[j] = s / fn;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++)
            data[i][j] -= mean[j];
    for (int a = 0; a < m; a++)
        for (int b = a; b < m; b++) {
            double s = 0.0;
            for (int i = 0; i < n; i++)
                s += data[i][a] * data[i][b];
            s = s / denom;
            cov[a][b] = s;
            cov[b][a] = s;
        }
}
