#!/usr/bin/env python3
"""Compile-time harness (not a test): per example kernel with a SCoP, the time `tessera run
--mode opt` spends in the polyhedral stage (`poly_ms`: SCoP detection, isl model,
dependences, scheduling, bounds proofs, AST, code generation to the IR) and in LLVM
(`compile_ms`: lowering, the O3 pipeline and machine code), next to LLVM's time for the
same file without the optimiser (`--mode jit`). Compile time does not depend on the
problem size; the kernels run at their small `RUN` sizes. Medians of --runs runs,
interleaved.

Usage: python3 bench/compile_time.py [--runs 5] [--only gemm,lu] [--md out.md]
"""
import statistics

from common import ROOT, T, arg_parser, emit, field, header, kernels, machine, run


def main():
    a = arg_parser(5).parse_args()
    jobs = []
    for name, path, entry in kernels(a.only):
        sizes = header(path, "RUN") or header(path, "BENCH")
        if not sizes:
            continue
        args = ["run", path, "--entry", entry, "--init", "zeros"] + sizes[0].split()
        out = run([T] + args + ["--mode", "opt"], cwd=ROOT)
        if "poly: 0 of 0 SCoP" in out or "poly:" not in out:
            continue
        jobs.append((name, args))
    got = {n: {"poly": [], "llvm": [], "jit": []} for n, _ in jobs}
    for _ in range(a.runs):
        for name, args in jobs:
            o = run([T] + args + ["--mode", "opt"], cwd=ROOT)
            got[name]["poly"].append(field(o, "poly_ms"))
            got[name]["llvm"].append(field(o, "compile_ms"))
            j = run([T] + args + ["--mode", "jit"], cwd=ROOT)
            got[name]["jit"].append(field(j, "compile_ms"))
    lines = ["Machine: %s; medians of %d interleaved runs." % (machine(), a.runs), "",
        "| kernel | poly (isl + IR) ms | LLVM (opt code) ms | opt total ms | LLVM without optimiser (jit) ms |",
        "|---|---|---|---|---|"]
    totals = []
    for name, _ in jobs:
        g = {k: statistics.median(v) for k, v in got[name].items()}
        tot = statistics.median([p + l for p, l in zip(got[name]["poly"], got[name]["llvm"])])
        totals.append(tot)
        lines.append("| %s | %.1f | %.1f | %.1f | %.1f |" % (name, g["poly"], g["llvm"], tot, g["jit"]))
        print(lines[-1], flush=True)
    lines.append("| **median** | | | **%.1f** | |" % statistics.median(totals))
    emit("\n".join(lines), a.md)


if __name__ == "__main__":
    main()
