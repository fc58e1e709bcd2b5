#!/usr/bin/env python3
"""The cost of the optimiser's run-time assumption tests (no wrap-around, accesses within
extents; crates/poly/src/nowrap.rs): `--mode opt` of the tree under test against a baseline
binary built from an earlier tree (TESSERA_BASE), side by side on every example kernel with a
`// BENCH:` line, the two runs interleaved, median of --runs, with 1 or 2 threads. Outputs
of the two binaries are compared checksum for checksum before a time is quoted.

    TESSERA_BASE=/path/to/old/tessera python3 bench/assumptions_ab.py --runs 3 --threads 2
"""
import math, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, T, arg_parser, emit, field, header, kernels, machine, run  # noqa: E402


def main():
    ap = arg_parser(3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    base = os.environ.get("TESSERA_BASE")
    if not base:
        sys.exit("TESSERA_BASE must name the baseline binary")
    rows, ratios = [], []
    for name, path, entry in kernels(a.only):
        sizes = header(path, "BENCH")
        if not sizes:
            continue
        args = sizes[0].split() + ["--init", "random:1", "--mode", "opt", "--threads", str(a.threads)]
        times = {T: [], base: []}
        sums = {}
        try:
            for _ in range(a.runs):
                for b in (base, T):
                    out = run([b, "run", path, "--entry", entry] + args, cwd=ROOT, timeout=600)
                    times[b].append(field(out, "time_ms"))
                    sums[b] = [l for l in out.splitlines() if l.startswith(("checksum", "result"))]
        except Exception as e:  # a kernel that fails is reported, not timed
            rows.append("| %s | failed: %s | | |" % (name, str(e).splitlines()[0][:80]))
            continue
        if sums[base] != sums[T]:
            rows.append("| %s | outputs differ | | |" % name)
            continue
        old, new = statistics.median(times[base]), statistics.median(times[T])
        r = new / old if old > 0 else 1.0
        ratios.append(r)
        rows.append("| %s | %.1f | %.1f | %.3f |" % (name, old, new, r))
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    text = "\n".join(
        ["| kernel | baseline opt ms | opt with run-time tests ms | ratio |", "|---|---|---|---|"]
        + rows
        + ["", "geomean ratio %.3f over %d kernels (%d threads, median of %d interleaved runs)" % (geo, len(ratios), a.threads, a.runs)]
    )
    emit(text, a.md, "assumption tests vs baseline; %s" % machine())


if __name__ == "__main__":
    main()
