#!/usr/bin/env python3
"""Benchmark harness (not a test): Tessera's JIT against gcc -O3 -march=native on the same C
file and the same inputs, side by side, median of N runs, as ratios.

For every example kernel with a `// BENCH:` line (or `--size run` to use the `// RUN:` sizes):
  1. `tessera run --save-inputs` writes the seeded inputs once;
  2. gcc -O3 -march=native -ffp-contract=off -fwrapv (the same FP and integer semantics as
     Tessera without --fast-math, so outputs are comparable bit for bit) builds the kernel with the generated driver
     (`tessera emit --target driver`), run N times on those inputs;
  3. `tessera run --mode jit` (guards on, then --no-guards) N times on the same inputs;
  4. outputs of every run are compared with gcc's (bit for bit without fast-math).
Prints a Markdown table: median times, ratios jit/gcc (lower is better for Tessera) and the
JIT compile time, plus the geometric mean.

Usage: python3 bench/jit_vs_gcc.py [--runs 5] [--size bench|run] [--only gemm,lu] [--md out.md]
"""
import argparse, os, re, statistics, subprocess, sys, tempfile, math, platform, datetime

from common import ROOT, T, arg_parser, emit, header, field, kernels, machine, same_dirs, run


def main():
    ap = arg_parser(5)
    ap.add_argument("--size", default="bench", choices=["bench", "run"])
    ap.add_argument("--extra", default="", help="extra flags for tessera run, e.g. --fast-math")
    a = ap.parse_args()
    rows = []
    for name, path, entry in kernels(a.only):
        sizes = header(path, "BENCH" if a.size == "bench" else "RUN") or header(path, "RUN")
        if not sizes:
            continue
        args = sizes[0].split()
        named = [x for x in args if x != "-D"]
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            # The seeded inputs, written once and fed to every run.
            run([T, "run", path, "--entry", entry, "--save-inputs", inp, "--mode", "jit", "--no-guards"] + args, cwd=ROOT)
            drv = os.path.join(tmp, "driver.c")
            open(drv, "w").write(run([T, "emit", path, "--entry", entry, "--target", "driver"], cwd=ROOT))
            exe = os.path.join(tmp, "gcc-O3")
            run(["gcc", "-O3", "-march=native", "-ffp-contract=off", "-fwrapv", "-std=gnu99", "-w", "-include", os.path.join(ROOT, "tests", "gcc-prelude.h"), drv, "-o", exe, "-lm"])
            res = {"gcc": [], "jit": [], "jit-noguards": []}
            compile_ms = []
            for r in range(a.runs):
                god = os.path.join(tmp, "gcc-out"); os.makedirs(god, exist_ok=True)
                res["gcc"].append(field(run([exe, inp, god] + named), "time_ms"))
                for mode, extra in (("jit", []), ("jit-noguards", ["--no-guards"])):
                    tod = os.path.join(tmp, mode + "-out")
                    ins = []
                    for f in os.listdir(inp):
                        ins += ["--input", "%s=%s" % (f[:-4], os.path.join(inp, f))]
                    out = run([T, "run", path, "--entry", entry, "--mode", "jit"] + extra + a.extra.split() + args + ins + ["--out", tod], cwd=ROOT)
                    res[mode].append(field(out, "time_ms"))
                    if mode == "jit":
                        compile_ms.append(field(out, "compile_ms") or float("nan"))
                    if not a.extra and not same_dirs(tod, god):
                        print("WARNING: %s %s output differs from gcc -O3" % (name, mode), file=sys.stderr)
            med = {k: statistics.median(v) for k, v in res.items()}
            rows.append((name, " ".join(named), med["gcc"], med["jit"], med["jit-noguards"], statistics.median(compile_ms)))
            print("%-16s gcc %9.2f ms  jit %9.2f ms (%.2fx)  noguards %9.2f ms (%.2fx)  compile %.1f ms" % (
                name, med["gcc"], med["jit"], med["jit"] / med["gcc"], med["jit-noguards"], med["jit-noguards"] / med["gcc"], rows[-1][5]), flush=True)
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    lines = ["| kernel | size | gcc -O3 (ms) | JIT (ms) | JIT/gcc | JIT no guards (ms) | no-guards/gcc | compile (ms) |", "|---|---|---|---|---|---|---|---|"]
    for n, s, g, j, u, c in rows:
        lines.append("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |" % (n, s, g, j, j / g, u, u / g, c))
    if rows:
        lines.append("| **geomean** | | | | **%.3f** | | **%.3f** | median %.1f |" % (
            geo([r[3] / r[2] for r in rows]), geo([r[4] / r[2] for r in rows]), statistics.median([r[5] for r in rows])))
    emit("\n".join(lines), a.md, "Machine: %s; runs=%d (median)" % (machine(), a.runs))


if __name__ == "__main__":
    main()
