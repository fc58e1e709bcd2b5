// ENTRY: kmeans_step
// DESC: one k-means step: label each point with its nearest centroid, then recompute the centroids (skeleton benchmark)
// RUN: -D n=10000 -D k=16 -D d=16
// TEST: -D n=0 -D k=0 -D d=0
// TEST: -D n=1 -D k=1 -D d=1
// TEST: -D n=2 -D k=3 -D d=2
// TEST: -D n=101 -D k=7 -D d=5
// BENCH: -D n=1000000 -D k=64 -D d=16

// Per-element function: index of the centroid nearest to x (squared
// Euclidean distance, ties go to the lowest index); -1 if k == 0.
int nearest(int k, int d, double x[d], double c[k][d])
{
    int best = -1;
    double bestd = 0.0;
    for (int j = 0; j < k; j++) {
        double s = 0.0;
        for (int t = 0; t < d; t++) {
            double diff = x[t] - c[j][t];
            s += diff * diff;
        }
        if (best < 0 || s < bestd) {
            best = j;
            bestd = s;
        }
    }
    return best;
}

// Per-point task for `tessera skel` (parMapChunk over points; X and C are read-only):
// the label of point i.
int classify(int i, int n, int k, int d, double X[n][d], double C[k][d])
{
    return nearest(k, d, X[i], C);
}

void kmeans_step(int n, int k, int d, double X[n][d], double C[k][d],
                 int label[n], double newC[k][d], int count[k])
{
    for (int j = 0; j < k; j++) {
        count[j] = 0;
        for (int t = 0; t < d; t++)
            newC[j][t] = 0.0;
    }
    for (int i = 0; i < n; i++) {
        int c = nearest(k, d, X[i], C);
        label[i] = c;
        if (c >= 0) {
            count[c]++;
            for (int t = 0; t < d; t++)
                newC[c][t] += X[i][t];
        }
    }
    for (int j = 0; j < k; j++)
        if (count[j] > 0)
            for (int t = 0; t < d; t++)
                newC[j][t] = newC[j][t] / count[j];
}
