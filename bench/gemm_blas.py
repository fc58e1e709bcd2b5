#!/usr/bin/env python3
"""Benchmark harness (not a test): Tessera's gemm (`examples/kernels/gemm.c`, PolyBench's
C = alpha*A*B + beta*C in its i-k-j order, `--mode opt`) against OpenBLAS's `cblas_dgemm`, on
1 and 2 threads, side by side in one script, median of --runs interleaved runs.

  1. `tessera run --save-inputs` writes the seeded inputs once per size;
  2. a C driver (built here with gcc -O2, linked with -lopenblas) reads the same A, B, C,
     calls cblas_dgemm --repeat times on fresh copies of C (OPENBLAS_NUM_THREADS=1 or 2) and
     writes its result;
  3. `tessera run --mode opt --threads 1|2 --repeat N` on the same inputs, and the same with
     `--no-pack` (no panel copies of the micro-kernel's operands);
  4. OpenBLAS's C is compared with Tessera's to a relative 1e-9 (OpenBLAS contracts FMAs and
     sums in another order, so not bit for bit; Tessera's opt output equals gcc -O3's bit for
     bit in the test suite).
Each run's time is the median of calls 5 to N (warm; Tessera has chosen between its
optimised code and the code as written by then). GFLOP/s = 2 ni nj nk / time.

Usage: python3 bench/gemm_blas.py [--runs 3] [--repeat 7] [--sizes 1000x1100x1200,...] [--md out.md]
Needs Debian's libopenblas-dev (apt-get install libopenblas-dev).
"""
import os, statistics, struct, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, T, arg_parser, emit, field, machine, run  # noqa: E402

KERNEL = os.path.join(ROOT, "examples", "kernels", "gemm.c")
DRIVER = r"""
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* Reads the raw doubles of a .npy file (version 1 or 2 header, C order, <f8). */
static double *npy(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    unsigned char h[12];
    if (fread(h, 1, 10, f) != 10) exit(2);
    size_t hl = h[8] | (h[9] << 8);
    if (h[6] >= 2) { if (fread(h + 10, 1, 2, f) != 2) exit(2); hl |= (size_t)h[10] << 16 | (size_t)h[11] << 24; }
    fseek(f, (long)hl, SEEK_CUR);
    double *x = malloc(n * sizeof *x);
    if (fread(x, sizeof *x, n, f) != n) { fprintf(stderr, "%s: short\n", path); exit(2); }
    fclose(f);
    return x;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec * 1e-6; }
int main(int argc, char **argv) {
    /* in-dir out-file ni nj nk alpha beta repeat */
    int ni = atoi(argv[3]), nj = atoi(argv[4]), nk = atoi(argv[5]), rep = atoi(argv[8]);
    double alpha = atof(argv[6]), beta = atof(argv[7]);
    char p[4096];
    snprintf(p, sizeof p, "%s/A.npy", argv[1]); double *A = npy(p, (size_t)ni * nk);
    snprintf(p, sizeof p, "%s/B.npy", argv[1]); double *B = npy(p, (size_t)nk * nj);
    snprintf(p, sizeof p, "%s/C.npy", argv[1]); double *C0 = npy(p, (size_t)ni * nj);
    double *C = malloc((size_t)ni * nj * sizeof *C);
    printf("times_ms:");
    for (int r = 0; r < rep; r++) {
        memcpy(C, C0, (size_t)ni * nj * sizeof *C);
        double t0 = now();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, nj, nk, alpha, A, nk, B, nj, beta, C, nj);
        printf(" %.3f", now() - t0);
    }
    printf("\n");
    FILE *o = fopen(argv[2], "wb");
    fwrite(C, sizeof *C, (size_t)ni * nj, o);
    fclose(o);
    return 0;
}
"""


def npy_doubles(path):
    """The doubles of a .npy file (C order, <f8)."""
    b = open(path, "rb").read()
    hl = struct.unpack("<H", b[8:10])[0] if b[6] == 1 else struct.unpack("<I", b[8:12])[0]
    off = (10 if b[6] == 1 else 12) + hl
    return struct.unpack("<%dd" % ((len(b) - off) // 8), b[off:])


def warm(out):
    """The median of calls 5 on of a `times_ms:` line."""
    line = [l for l in out.splitlines() if l.startswith("times_ms:")][0]
    ts = [float(x) for x in line.split()[1:]]
    return statistics.median(ts[4:] if len(ts) > 4 else ts)


def main():
    ap = arg_parser(3)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sizes", default="1000x1100x1200,960x1152x1024,2000x2300x2600",
                    help="ni x nj x nk, comma-separated (PolyBench LARGE, a multiple of 4 x 16, EXTRALARGE)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tessera-gemm-blas-")
    src = os.path.join(tmp, "driver.c")
    exe = os.path.join(tmp, "driver")
    open(src, "w").write(DRIVER)
    run(["gcc", "-O2", src, "-o", exe, "-lopenblas"])
    alpha, beta = "1.5", "1.2"
    rows = []
    for size in a.sizes.split(","):
        ni, nj, nk = size.split("x")
        d = ["-D", "ni=" + ni, "-D", "nj=" + nj, "-D", "nk=" + nk, "-D", "alpha=" + alpha, "-D", "beta=" + beta]
        inp = os.path.join(tmp, "in-" + size)
        ours = os.path.join(tmp, "tessera-" + size)
        base = [T, "run", KERNEL, "--entry", "gemm", "--init", "random:1"] + d
        run(base + ["--mode", "opt", "--threads", "1", "--save-inputs", inp, "--out", ours])
        times = {k: [] for k in ("t1", "t2", "u1", "u2", "b1", "b2")}
        compile_ms = None
        wrong = ""
        for _ in range(a.runs):
            for th in ("1", "2"):
                out = run(base + ["--mode", "opt", "--threads", th, "--repeat", str(a.repeat)])
                times["t" + th].append(warm(out))
                compile_ms = (field(out, "poly_ms") or 0) + (field(out, "compile_ms") or 0)
                # The same without the panel copies of the micro-kernel's operands.
                out = run(base + ["--mode", "opt", "--threads", th, "--repeat", str(a.repeat), "--no-pack"])
                times["u" + th].append(warm(out))
                env = dict(os.environ, OPENBLAS_NUM_THREADS=th)
                res = os.path.join(tmp, "blas-%s-%s" % (size, th))
                out = run([exe, inp, res, ni, nj, nk, alpha, beta, str(a.repeat)], env=env)
                times["b" + th].append(warm(out))
                theirs = struct.unpack("<%dd" % (os.path.getsize(res) // 8), open(res, "rb").read())
                mine = npy_doubles(os.path.join(ours, "C.npy"))
                bad = sum(1 for x, y in zip(mine, theirs) if abs(x - y) > 1e-9 * max(abs(x), abs(y), 1e-300))
                if bad or len(mine) != len(theirs):
                    wrong = " (OpenBLAS differs from Tessera beyond 1e-9 in %d elements)" % bad
        gf = 2.0 * int(ni) * int(nj) * int(nk) / 1e6
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f%% | %.0f%% | %.0f |%s" % (
            size, med["t1"], med["u1"], med["b1"], med["t2"], med["u2"], med["b2"],
            gf / med["t1"], gf / med["t2"], 100 * med["b1"] / med["t1"], 100 * med["b2"] / med["t2"],
            compile_ms, wrong))
        print(rows[-1], flush=True)
    head = ("Machine: %s; gemm (examples/kernels/gemm.c, opt) against OpenBLAS cblas_dgemm; runs=%d "
            "(median, interleaved), median of calls 5 to %d per run; times in ms" % (machine(), a.runs, a.repeat))
    table = ("| ni x nj x nk | Tessera 1t | Tessera --no-pack 1t | OpenBLAS 1t | Tessera 2t | Tessera --no-pack 2t | "
             "OpenBLAS 2t | Tessera GFLOP/s 1t | Tessera GFLOP/s 2t | of OpenBLAS 1t | of OpenBLAS 2t | compile ms |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
             + "\n".join(rows))
    emit(table, a.md, head)


if __name__ == "__main__":
    main()
