/* Hand-written C baselines of bench/operators.py's workloads (gcc -O3 -march=native, one
 * thread): the figure a compiled query should come close to. Reads 1-D .npy columns.
 *
 *   operators_hand WORKLOAD RUNS FILES... [ARGS]
 *   count_expr a b c            count (a + 2b - c) > 0
 *   count_and a b TA TB         count a > TA && b < TB
 *   groupby k v NKEYS           sum(v), count(*) by k in 0..NKEYS-1
 *   sort_i32 x                  sort a copy (LSD radix, 4 passes of 8 bits)
 *   topk a K                    the K largest (a heap with a threshold)
 * Prints the median time in ms and a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stdint.h>

static void *load(const char *path, long *n, int elem) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    unsigned char head[10];
    if (fread(head, 1, 10, f) != 10) exit(2);
    long hlen = head[8] | (head[9] << 8);
    fseek(f, 0, SEEK_END);
    long size = ftell(f) - 10 - hlen;
    fseek(f, 10 + hlen, SEEK_SET);
    *n = size / elem;
    void *p = malloc(size > 0 ? size : 1);
    if (fread(p, 1, size, f) != (size_t)size) exit(2);
    fclose(f);
    return p;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *w = argv[1];
    int runs = atoi(argv[2]);
    double times[64];
    double check = 0;
    long n;
    for (int r = 0; r <= runs && r < 64; r++) {
        double t0 = 0, t1 = 0;
        if (!strcmp(w, "count_expr")) {
            static double *a, *b, *c;
            if (!a) { a = load(argv[3], &n, 8); b = load(argv[4], &n, 8); c = load(argv[5], &n, 8); }
            t0 = now();
            long k = 0;
            for (long i = 0; i < n; i++) k += (a[i] + 2 * b[i] - c[i]) > 0;
            t1 = now();
            check = k;
        } else if (!strcmp(w, "count_and")) {
            static double *a, *b;
            if (!a) { a = load(argv[3], &n, 8); b = load(argv[4], &n, 8); }
            double ta = atof(argv[5]), tb = atof(argv[6]);
            t0 = now();
            long k = 0;
            for (long i = 0; i < n; i++) k += (a[i] > ta) & (b[i] < tb);
            t1 = now();
            check = k;
        } else if (!strcmp(w, "groupby")) {
            static long *k;
            static double *v;
            if (!k) { k = load(argv[3], &n, 8); v = load(argv[4], &n, 8); }
            long nk = atol(argv[5]);
            double *s = calloc(nk, 8);
            long *c = calloc(nk, 8);
            t0 = now();
            for (long i = 0; i < n; i++) { s[k[i]] += v[i]; c[k[i]]++; }
            t1 = now();
            check = 0;
            for (long g = 0; g < nk; g++) check += s[g] + c[g];
            free(s); free(c);
        } else if (!strcmp(w, "sort_i32")) {
            static int32_t *x;
            if (!x) x = load(argv[3], &n, 4);
            uint32_t *a = malloc(n * 4), *b = malloc(n * 4);
            t0 = now();
            for (long i = 0; i < n; i++) a[i] = (uint32_t)x[i] ^ 0x80000000u;
            for (int p = 0; p < 4; p++) {
                long cnt[257] = {0};
                for (long i = 0; i < n; i++) cnt[((a[i] >> (8 * p)) & 255) + 1]++;
                for (int d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
                for (long i = 0; i < n; i++) b[cnt[(a[i] >> (8 * p)) & 255]++] = a[i];
                uint32_t *t = a; a = b; b = t;
            }
            t1 = now();
            check = (int32_t)(a[0] ^ 0x80000000u) + (double)(int32_t)(a[n - 1] ^ 0x80000000u);
            free(a); free(b);
        } else if (!strcmp(w, "topk")) {
            static double *a;
            if (!a) a = load(argv[3], &n, 8);
            long k = atol(argv[4]);
            double *h = malloc(k * 8);
            t0 = now();
            long m = 0;
            for (long i = 0; i < n; i++) {
                double v = a[i];
                if (m < k) {
                    long j = m++;
                    while (j > 0 && h[(j - 1) / 2] > v) { h[j] = h[(j - 1) / 2]; j = (j - 1) / 2; }
                    h[j] = v;
                } else if (v > h[0]) {
                    long j = 0;
                    for (;;) {
                        long c = 2 * j + 1;
                        if (c >= k) break;
                        if (c + 1 < k && h[c + 1] < h[c]) c++;
                        if (!(h[c] < v)) break;
                        h[j] = h[c]; j = c;
                    }
                    h[j] = v;
                }
            }
            qsort(h, m, 8, cmpd);
            t1 = now();
            check = h[m - 1];
            free(h);
        } else {
            return 2;
        }
        if (r > 0) times[r - 1] = t1 - t0;
    }
    qsort(times, runs, 8, cmpd);
    printf("%.3f %.17g\n", times[runs / 2], check);
    return 0;
}
