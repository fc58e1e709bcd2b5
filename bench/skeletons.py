#!/usr/bin/env python3
"""Skeleton benchmark harness (not a test): the paper's benchmarks (BACKGROUND.md section 1)
through `tessera skel --mode jit`, on 1 and 2 threads, side by side in one script:

  * sequential: one task holding every element on one thread (chunk, tau = n), or for
    Fibonacci the whole recursion through `tessera run`;
  * a sweep of fixed tau values;
  * the adaptive controller started from a too small and from a too large tau;
  * rayon's own adaptive splitting (`--skeleton rayon`, par_iter over the elements) on the
    same work and pool size.

Reports the median of --runs runs per configuration, speedup over sequential, the share of
tasks in the target window after the first adaptation (as `tessera skel` prints it), and the
adaptive runs' throughput relative to the best fixed tau of the sweep. Every run's result
checksum must equal the sequential one (else the script stops).

Usage: python3 bench/skeletons.py [--runs 3] [--quick] [--only matmul,fib] [--md docs/skeletons-table.md]
"""
import argparse, datetime, os, platform, re, statistics, subprocess, sys

from common import emit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T = os.environ.get("TESSERA_BIN") or os.path.join(ROOT, "target", "release", "tessera")
K = os.path.join(ROOT, "examples", "kernels")

# name, file, entry, skeleton, range (lo, hi), -D defines, tau sweep; then --quick sizes.
BENCHES = [
    ("matmul", "matmul.c", "matmul_row_sum", "chunk", (0, 2000), ["n=2000"], [1, 4, 16, 64, 256, 1000],
     (0, 300), ["n=300"], [1, 8, 64, 150]),
    ("sumeuler-chunk", "sumeuler.c", "totient", "chunk", (1, 12001), [], [1, 10, 100, 1000, 6000],
     (1, 3001), [], [1, 50, 500, 1500]),
    ("sumeuler-stride", "sumeuler.c", "totient", "stride", (1, 12001), [], [2, 8, 32, 128, 1024, 6000],
     (1, 3001), [], [2, 16, 128, 1500]),
    ("fib", "fib.c", "fib", "divconq-thresh", (0, 44), [], [22, 26, 30, 33, 36, 39, 42],
     (0, 30), [], [10, 15, 20, 25]),
    ("kmeans-classify", "kmeans.c", "classify", "chunk", (0, 4000000), ["n=4000000", "k=64", "d=16"],
     [100, 1000, 10000, 100000, 2000000], (0, 100000), ["n=100000", "k=64", "d=16"], [100, 1000, 10000, 50000]),
    ("mandelbrot", "mandelbrot.c", "mandel_row", "chunk", (0, 2000), ["w=3000", "h=2000", "maxit=1000"],
     [1, 4, 16, 64, 256, 1000], (0, 400), ["w=600", "h=400", "maxit=500"], [1, 8, 64, 200]),
]


def tess(args):
    r = subprocess.run([T] + args, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        sys.exit("tessera %s failed (%d):\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r.stdout


def get(out, pat, conv=float):
    m = re.search(pat, out, re.M)
    return conv(m.group(1)) if m else None


def measure_all(jobs, runs):
    """Runs every job once per round, `runs` rounds (interleaved, so that drift of the shared
    machine hits every configuration alike); returns the stats of each job's median run."""
    outs = {k: [] for k, _ in jobs}
    for _ in range(runs):
        for k, args in jobs:
            o = tess(args)
            outs[k].append((get(o, r"^time_ms:\s*([0-9.]+)"), o))
    return {k: stats(v) for k, v in outs.items()}


def stats(outs):
    """The median run's time, result line and task count; the median over the runs of the
    share of tasks in the window (one preempted run does not decide it)."""
    wins = [w for w in (get(o, r"^in window after first adaptation:\s*([0-9.]+)%") for _, o in outs) if w is not None]
    outs = sorted(outs, key=lambda x: x[0])
    ms, o = outs[len(outs) // 2]
    return {
        "ms": ms,
        # The checksum of the per-element results (map skeletons), else the result (sum).
        "result": (get(o, r"^checksum:\s*(\S+)", str) or get(o, r"^result:(?: sum)?\s*(\S+)", str)),
        "tasks": get(o, r"^tasks:\s*(\d+) tasks", int),
        "inwin": statistics.median(wins) if wins else None,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run of the harness)")
    ap.add_argument("--only", default="")
    ap.add_argument("--md", default="")
    ap.add_argument("--window", default="10..100", help="target window for --adaptive, ms")
    ap.add_argument("--confirm", type=int, default=5,
                    help="rounds of the confirmation phase: the sweep's best fixed tau and both adaptive "
                         "starts re-run interleaved on 2 threads (0: ratio from the sweep alone)")
    a = ap.parse_args()
    md = []
    summary = ["| benchmark | skeleton | n | seq (ms) | best fixed τ (2 thr) | best fixed (ms) | adaptive from small τ (ms) | adaptive from large τ (ms) | adaptive / best throughput | in window after 1st adaptation | rayon 2 thr (ms) | speedup 2 thr (best fixed / adaptive / rayon) |",
               "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for b in BENCHES:
        name, fn, entry, sk, rng, defs, taus = b[:7]
        if a.quick:
            rng, defs, taus = b[7], b[8], b[9]
        if a.only and name not in a.only.split(","):
            continue
        path = os.path.join(K, fn)
        lo, hi = rng
        n = hi - lo
        D = sum([["-D", d] for d in defs], [])
        base = ["skel", path, "--entry", entry, "--over", "%d..%d" % (lo, hi), "--mode", "jit"] + D
        if sk == "divconq-thresh":
            seq_args = ["run", path, "--entry", entry, "--mode", "jit", "-D", "n=%d" % hi]
        else:
            seq_args = base + ["--skeleton", "chunk", "--tau", str(n), "--threads", "1"]
        rows = []
        lines = ["### %s (%s over %d..%d%s)" % (name, sk, lo, hi, ", " + " ".join(defs) if defs else ""), "",
                 "(sequential time)", "",
                 "| configuration | 1 thread (ms) | 2 threads (ms) | speedup 2 thr | tasks (2 thr) | in window after 1st adaptation (2 thr) |",
                 "|---|---|---|---|---|---|"]
        configs = [("τ = %d" % t, ["--skeleton", sk, "--tau", str(t)]) for t in taus]
        small, large = taus[0], taus[-1]
        configs += [("adaptive from τ = %d" % small, ["--skeleton", sk, "--tau", str(small), "--adaptive", "--target-ms", a.window]),
                    ("adaptive from τ = %d" % large, ["--skeleton", sk, "--tau", str(large), "--adaptive", "--target-ms", a.window])]
        if sk != "divconq-thresh":
            configs.append(("rayon par_iter", ["--skeleton", "rayon"]))
        jobs = [("seq", seq_args)] + [((label, th), base + extra + ["--threads", str(th)])
                                      for label, extra in configs for th in (1, 2)]
        got = measure_all(jobs, a.runs)
        seq = got["seq"]
        seq_result = seq["result"]
        lines[2] = "Sequential: %.1f ms. Times are medians of %d interleaved runs (ms); speedup = sequential / time." % (seq["ms"], a.runs)
        res = {}
        for label, extra in configs:
            r = {}
            for th in (1, 2):
                m = got[(label, th)]
                if m["result"] is not None and seq_result is not None and m["result"] != seq_result:
                    sys.exit("%s %s: result %s differs from sequential %s" % (name, label, m["result"], seq_result))
                r[th] = m
            res[label] = r
            lines.append("| %s | %.1f | %.1f | %.2f | %s | %s |" % (
                label, r[1]["ms"], r[2]["ms"], seq["ms"] / r[2]["ms"], r[2]["tasks"],
                "%.0f%%" % r[2]["inwin"] if r[2]["inwin"] is not None else ""))
            print("%-16s %-24s 1thr %9.1f ms  2thr %9.1f ms  inwin %s" % (name, label, r[1]["ms"], r[2]["ms"], r[2]["inwin"]), flush=True)
        fixed = [(res["τ = %d" % t][2]["ms"], t) for t in taus]
        best_ms, best_tau = min(fixed)
        ad_s = res["adaptive from τ = %d" % small][2]
        ad_l = res["adaptive from τ = %d" % large][2]
        worst_ad = max(ad_s["ms"], ad_l["ms"])
        inw = [x["inwin"] for x in (ad_s, ad_l) if x["inwin"] is not None]
        ray = res.get("rayon par_iter", {}).get(2)
        lines.append("")
        lines.append("Sweep: best fixed τ on 2 threads %d (%.1f ms). Adaptive from τ=%d: %.1f ms (%.0f%% of the best fixed τ's throughput), from τ=%d: %.1f ms (%.0f%%)." % (
            best_tau, best_ms, small, ad_s["ms"], 100 * best_ms / ad_s["ms"], large, ad_l["ms"], 100 * best_ms / ad_l["ms"]))
        if a.confirm > 0:
            # The minimum over a sweep of noisy medians is biased low (the winner's curse): the
            # tau that won did so partly by luck. Re-measure the winner against both adaptive
            # starts, interleaved, and take the ratio from these fresh runs.
            cjobs = [("best", base + ["--skeleton", sk, "--tau", str(best_tau), "--threads", "2"]),
                     ("small", base + configs[len(taus)][1] + ["--threads", "2"]),
                     ("large", base + configs[len(taus) + 1][1] + ["--threads", "2"])]
            c = measure_all(cjobs, a.confirm)
            for k in c:
                if c[k]["result"] is not None and seq_result is not None and c[k]["result"] != seq_result:
                    sys.exit("%s confirm %s: result %s differs from sequential %s" % (name, k, c[k]["result"], seq_result))
            best_ms, ad_s, ad_l = c["best"]["ms"], c["small"], c["large"]
            worst_ad = max(ad_s["ms"], ad_l["ms"])
            lines.append("Confirmation (%d interleaved runs on 2 threads, medians): τ = %d %.1f ms, adaptive from τ=%d %.1f ms (%.0f%%), from τ=%d %.1f ms (%.0f%%)." % (
                a.confirm, best_tau, best_ms, small, ad_s["ms"], 100 * best_ms / ad_s["ms"], large, ad_l["ms"], 100 * best_ms / ad_l["ms"]))
            print("%-16s confirm: best %.1f small %.1f large %.1f" % (name, best_ms, ad_s["ms"], ad_l["ms"]), flush=True)
        md += lines + [""]
        summary.append("| %s | %s | %d | %.0f | %d | %.0f | %.0f | %.0f | %.0f%% | %s | %s | %.2f / %.2f / %s |" % (
            name, sk, n, seq["ms"], best_tau, best_ms, ad_s["ms"], ad_l["ms"], 100 * best_ms / worst_ad,
            " / ".join("%.0f%%" % x for x in inw), "%.0f" % ray["ms"] if ray else "n/a",
            seq["ms"] / best_ms, seq["ms"] / worst_ad, "%.2f" % (seq["ms"] / ray["ms"]) if ray else "n/a"))
    head = "Machine: %s, %d cores; %s; `tessera skel --mode jit`, window %s ms, runs=%d (median)%s." % (
        platform.processor() or platform.machine(), os.cpu_count(), datetime.date.today(), a.window, a.runs, ", QUICK sizes" if a.quick else "")
    text = "\n".join([head, ""] + summary + ["", "(adaptive / best throughput uses the slower of the two adaptive runs%s; in-window shares (medians over the sweep's runs) are for the starts from small / large τ.)" % (
        ", from the confirmation phase (%d interleaved runs of the sweep's best τ and both adaptive starts)" % a.confirm if a.confirm > 0 else ""), ""] + md)
    emit(text, a.md)


if __name__ == "__main__":
    main()
