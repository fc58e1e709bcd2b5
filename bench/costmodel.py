#!/usr/bin/env python3
"""The cost model on the paper's six skeleton benchmarks (BACKGROUND §1, issue 15):
k = t/Γ against τ for CM0, CMC, CMW (TIR fragments) and CMW-M (optimised LLVM blocks), with
the stable k and the granularity above which it is stable; then the adaptive controller with
τ as the cost proxy against the controller fed by the model, side by side.

Needs a machine profile (`tessera calibrate`); `--profile FILE` picks one. Every number comes
from `tessera skel --mode jit --cost MODEL` (the counting builds run the tasks, so their
times include the counters: median x1.02 to x1.04 over the calibration suite).

Usage: python3 bench/costmodel.py [--runs 3] [--threads 1] [--profile FILE] [--md docs/costmodel-table.md] [--svg docs/img/k_vs_tau.svg]
"""
import argparse, os, platform, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skeletons import get, tess  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K = os.path.join(ROOT, "examples", "kernels")

# name, file, entry, skeleton, range, defines, tau sweep (small to large tasks)
BENCHES = [
    ("matmul", "matmul.c", "matmul_row_sum", "chunk", (0, 600), ["n=600"], [1, 2, 4, 16, 64, 150]),
    ("sumeuler-chunk", "sumeuler.c", "totient", "chunk", (1, 6001), [], [1, 4, 16, 64, 256, 1500]),
    ("sumeuler-stride", "sumeuler.c", "totient", "stride", (1, 6001), [], [6000, 1500, 375, 94, 24, 6]),
    ("fib", "fib.c", "fib", "divconq-thresh", (0, 34), [], [8, 12, 16, 20, 24, 28]),
    ("kmeans", "kmeans.c", "classify", "chunk", (0, 400000), ["n=400000", "k=64", "d=16"], [10, 100, 1000, 10000, 100000]),
    ("mandelbrot", "mandelbrot.c", "mandel_row", "chunk", (0, 600), ["w=900", "h=600", "maxit=1000"], [1, 2, 8, 32, 150]),
]
MODELS = ["cm0", "cmc", "cmw", "cmw-m"]
PAPER = {"matmul": (0.579, 11400), "sumeuler-stride": (6.87, 306), "sumeuler-chunk": (4.31, 129),
         "fib": (0.542, 294), "kmeans": (0.535, 2100), "mandelbrot": (0.251, 17000)}


def run_median(args, runs):
    outs = sorted(((get(o, r"^time_ms:\s*([0-9.]+)"), o) for o in (tess(args) for _ in range(runs))),
                  key=lambda x: x[0])
    return outs[len(outs) // 2]


def write_svg(path, summary):
    """Small multiples, one per benchmark: k / (its stable k) against the mean task time (log
    scale), one line per model, with the ±10% band."""
    import math
    colors = ["#999999", "#1f77b4", "#ff7f0e", "#d62728"]
    pw, ph, m = 300, 200, 40
    cols = 3
    rows_n = (len(summary) + cols - 1) // cols
    W, H = cols * (pw + m) + m, rows_n * (ph + m + 20) + m + 20
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>']
    for mi, model in enumerate(MODELS):
        out.append('<text x="%d" y="16" fill="%s">%s</text>' % (m + 90 * mi, colors[mi % 4], model.upper()))
    for i, (name, rows) in enumerate(summary.items()):
        x0 = m + (i % cols) * (pw + m)
        y0 = m + 10 + (i // cols) * (ph + m + 20)
        ts = [r[1] for r in rows if r[1] > 0]
        if not ts:
            continue
        lo, hi = math.log10(min(ts)), math.log10(max(ts))
        hi = hi if hi > lo else lo + 1
        X = lambda t: x0 + (math.log10(t) - lo) / (hi - lo) * pw
        Y = lambda v: y0 + ph - (min(max(v, 0.0), 2.0) / 2.0) * ph
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (x0, y0, pw, ph))
        out.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#2ca02c" fill-opacity="0.12"/>' % (x0, Y(1.1), pw, Y(0.9) - Y(1.1)))
        out.append('<text x="%d" y="%d">%s</text>' % (x0, y0 - 4, name))
        for v in (0.5, 1.0, 1.5):
            out.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (x0 - 3, Y(v) + 4, v))
        out.append('<text x="%d" y="%d">%.3g ms</text>' % (x0, y0 + ph + 14, min(ts)))
        out.append('<text x="%d" y="%d" text-anchor="end">%.3g ms (task time)</text>' % (x0 + pw, y0 + ph + 14, max(ts)))
        for mi in range(len(MODELS)):
            big = [r[2][mi] for r in rows if r[1] >= 0.1 and r[2][mi]]
            if not big:
                continue
            st = statistics.median(big)
            pts = ["%.1f,%.1f" % (X(r[1]), Y(r[2][mi] / st)) for r in rows if r[1] > 0 and r[2][mi]]
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>' % (colors[mi % 4], " ".join(pts)))
    out.append('<text x="%d" y="%d">k / stable k (green: ±10%%) against mean task time, log scale</text>' % (m, H - 8))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--md", default="")
    ap.add_argument("--svg", default="", help="write k-vs-τ plots (k / stable k against task time) to this SVG file")
    a = ap.parse_args()
    prof = ["--profile", a.profile] if a.profile else []
    lines = []
    say = lambda s="": (print(s, flush=True), lines.append(s))
    say("Machine: %s, %d cores; `tessera skel --mode jit --cost MODEL`, %d thread(s), runs=%d (median)." % (
        platform.processor() or platform.machine(), os.cpu_count(), a.threads, a.runs))
    say()
    say("### k = t/Γ against τ (ns per unit of Γ; mean task time in ms)")
    say()
    say("| benchmark | τ | task ms | " + " | ".join("k %s" % m.upper() for m in MODELS) + " |")
    say("|---|---|---|" + "---|" * len(MODELS))
    summary = {}
    for name, fn, entry, sk, (lo, hi), defs, taus in BENCHES:
        if a.only and name not in a.only.split(","):
            continue
        base = ["skel", os.path.join(K, fn), "--entry", entry, "--skeleton", sk, "--over", "%d..%d" % (lo, hi),
                "--mode", "jit", "--threads", str(a.threads)] + sum((["-D", d] for d in defs), [])
        rows = []
        for tau in taus:
            ks, task_ms = [], []
            for m in MODELS:
                _, o = run_median(base + ["--tau", str(tau), "--cost", m] + prof, a.runs)
                ks.append(get(o, r"^cost \S+: .*total ([0-9.e+-]+),"))
                task_ms.append(get(o, r"^tasks: \d+ tasks, task time mean ([0-9.]+) ms"))
            t = statistics.median(task_ms)
            rows.append((tau, t, ks))
            say("| %s | %d | %.3f | %s |" % (name, tau, t, " | ".join("%.4g" % k for k in ks)))
        summary[name] = rows
    say()
    say("### Stable k (median over the τ whose tasks last ≥ 0.1 ms) and its spread there")
    say()
    say("| benchmark | " + " | ".join("%s stable k (max dev.)" % m.upper() for m in MODELS) +
        " | k within ±10% from (ms) | paper CMW k (granularity µs) |")
    say("|---|" + "---|" * len(MODELS) + "---|---|")
    for name, rows in summary.items():
        big = [r for r in rows if r[1] >= 0.1]
        cells = []
        for i in range(len(MODELS)):
            ks = [r[2][i] for r in big if r[2][i]]
            if not ks:
                cells.append("—")
                continue
            med = statistics.median(ks)
            dev = max(abs(k / med - 1) for k in ks)
            cells.append("%.4g (%.0f%%)" % (med, 100 * dev))
        # The smallest task time from which CMW-M's k stays within ±10% of its stable value.
        stable_from = "—"
        ks = [(r[1], r[2][-1]) for r in big if r[2][-1]]
        if ks:
            med = statistics.median(k for _, k in ks)
            ok = sorted(t for t, k in ks if abs(k / med - 1) <= 0.10)
            bad = [t for t, k in ks if abs(k / med - 1) > 0.10]
            cand = [t for t in ok if all(b < t for b in bad)]
            stable_from = "%.2f" % cand[0] if cand else "never"
        p = PAPER.get(name)
        say("| %s | %s | %s | %s |" % (name, " | ".join(cells), stable_from, "%.3g (%d)" % p if p else "—"))
    if a.svg:
        write_svg(a.svg, summary)
        say()
        say("k-vs-τ plots: %s" % a.svg)
    say()
    say("### Adaptive controller: τ as the cost proxy vs the CMW-M model (chunk and stride, from τ = 1)")
    say()
    say("| benchmark | best fixed τ (ms) | adaptive, τ proxy (ms) | in window | adaptive, CMW-M (ms) | in window | CMW-M / proxy throughput |")
    say("|---|---|---|---|---|---|---|")
    for name, fn, entry, sk, (lo, hi), defs, taus in BENCHES:
        if sk == "divconq-thresh" or (a.only and name not in a.only.split(",")):
            continue
        base = ["skel", os.path.join(K, fn), "--entry", entry, "--skeleton", sk, "--over", "%d..%d" % (lo, hi),
                "--mode", "jit", "--threads", str(a.threads)] + sum((["-D", d] for d in defs), [])
        fixed = min(run_median(base + ["--tau", str(t)], a.runs)[0] for t in taus)
        start = ["--tau", "1"] if sk == "chunk" else []
        tp, op = run_median(base + start + ["--adaptive"], a.runs)
        tm, om = run_median(base + ["--adaptive", "--cost", "cmw-m"] + prof, a.runs)
        w = lambda o: get(o, r"^in window after first adaptation:\s*([0-9.]+)%")
        say("| %s | %.1f | %.1f | %s%% | %.1f | %s%% | %.2f |" % (name, fixed, tp, w(op), tm, w(om), tp / tm))
    if a.md:
        with open(a.md, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
