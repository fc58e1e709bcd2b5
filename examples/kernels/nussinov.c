// ENTRY: nussinov
// DESC: Nussinov RNA folding: maximum number of nested complementary base pairs (interval DP); returns the optimum
// RUN: -D n=300
// TEST: -D n=0
// TEST: -D n=1
// TEST: -D n=2
// TEST: -D n=61
// BENCH: -D n=2000

// Bases are seq[i] % 4 with A=0, C=1, G=2, U=3, so A-U and C-G (the
// Watson-Crick pairs) are exactly the pairs whose codes sum to 3.
int pairs(int a, int b)
{
    return (a % 4) + (b % 4) == 3 ? 1 : 0;
}

// table[i][j] (i <= j) = best score for the subsequence i..j.
int nussinov(int n, int seq[n], int table[n][n])
{
    if (n == 0)
        return 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            table[i][j] = 0;
    for (int i = n - 1; i >= 0; i--) {
        for (int j = i + 1; j < n; j++) {
            int best = max(table[i + 1][j], table[i][j - 1]);
            int inner = i + 1 <= j - 1 ? table[i + 1][j - 1] : 0;
            best = max(best, inner + pairs(seq[i], seq[j]));
            for (int k = i + 1; k < j; k++)
                best = max(best, table[i][k] + table[k + 1][j]);
            table[i][j] = best;
        }
    }
    return table[0][n - 1];
}
