// ENTRY: bicg
// DESC: BiCG kernel: q = A * p and s = A^T * r in a single sweep over A
// RUN: -D n=1400 -D m=1200
// TEST: -D n=0 -D m=0
// TEST: -D n=2 -D m=1
// TEST: -D n=13 -D m=19
// BENCH: -D n=9000 -D m=8000

void bicg(int n, int m, double A[n][m], double s[m], double q[n], double p[m], double r[n])
{
    for (int j = 0; j < m; j++)
        s[j] = 0.0;
    for (int i = 0; i < n; i++) {
        double acc = 0.0;
        double ri = r[i];
        for (int j = 0; j < m; j++) {
            s[j] = s[j] + ri * A[i][j];
            acc = acc + A[i][j] * p[j];
        }
        q[i] = acc;
    }
}
