#!/usr/bin/env python3
"""Benchmark harness (not a test): Tessera's polyhedral optimiser (`--mode opt`) against the
plain Tessera JIT, gcc -O3, gcc's Graphite and clang-14's Polly, on 1 and 2 threads, side by
side in one script, median of N interleaved runs, as ratios.

For every example kernel with a `// BENCH:` line in which the optimiser finds a SCoP (also
where it keeps the original code):
  1. `tessera run --save-inputs` writes the seeded inputs once;
  2. the kernel's C file with the generated driver (`tessera emit --target driver`) is built by
       gcc -O3 -march=native                                        (gcc)
       gcc -O3 -march=native -floop-nest-optimize                   (Graphite, 1 thread)
       ... -floop-parallelize-all -ftree-parallelize-loops=2        (Graphite, 2 threads)
       clang-14 -O3 -march=native -mllvm -polly                     (Polly, 1 thread)
       ... -mllvm -polly-parallel -lgomp                            (Polly, 2 threads; with
           -polly-pattern-matching-based-opts=false, see below)
     all with -ffp-contract=off -fwrapv (Tessera's FP and integer semantics without
     --fast-math, so that every output can be compared bit for bit);
  3. `tessera run --mode jit`, `--mode opt --threads 1`, `--mode opt --threads 2`;
  4. every output is compared with gcc -O3's; a configuration whose output differs is marked
     `wrong` and left out of the comparison.
Runs are interleaved (run r of every configuration before run r+1 of any) so that drift of
this shared machine hits all alike. OMP_NUM_THREADS=2 for the 2-thread peers.

Polly's parallel mode with its matmul pattern computes gemm-like kernels wrong on this
machine (a race); `-polly-pattern-matching-based-opts=false` makes it right.

Usage: python3 bench/poly_vs_peers.py [--runs 5] [--only gemm,lu] [--md out.md]
Needs gcc and clang-14 (Debian: apt-get install clang-14; Polly is built into Debian's clang).
"""
import argparse, os, re, statistics, subprocess, sys, tempfile, math, platform, datetime

from common import ROOT, T, PEERS, arg_parser, emit, header, field, kernels, machine, peer_build, same_dirs, \
    run as _run
OURS = [
    ("jit", 1, ["--mode", "jit"]),
    ("opt", 1, ["--mode", "opt", "--threads", "1"]),
    ("opt-2t", 2, ["--mode", "opt", "--threads", "2"]),
]
TIMEOUT = 300


def run(cmd, env=None, **kw):
    """`common.run` with this harness's time limit."""
    return _run(cmd, env=env, timeout=TIMEOUT, **kw)


def has_scop(path, entry, args):
    out = run([T, "run", path, "--entry", entry, "--mode", "opt", "--init", "zeros"] + args, cwd=ROOT)
    m = re.search(r"^poly: (\d+) of (\d+) SCoP", out, re.M)
    # Kernels with a SCoP, optimised or kept as they are (then opt runs the original code).
    return m is not None and int(m.group(2)) > 0


def main():
    a = arg_parser(5).parse_args()
    env2 = dict(os.environ, OMP_NUM_THREADS="2")
    rows = []
    for name, path, entry in kernels(a.only):
        sizes = header(path, "BENCH")
        if not sizes:
            continue
        small = (header(path, "RUN") or sizes)[0].split()
        if not has_scop(path, entry, small):
            continue
        args = sizes[0].split()
        named = [x for x in args if x != "-D"]
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in")
            run([T, "run", path, "--entry", entry, "--save-inputs", inp, "--mode", "jit", "--no-guards"] + args, cwd=ROOT)
            ins = []
            for f in os.listdir(inp):
                ins += ["--input", "%s=%s" % (f[:-4], os.path.join(inp, f))]
            drv = os.path.join(tmp, "driver.c")
            open(drv, "w").write(run([T, "emit", path, "--entry", entry, "--target", "driver"], cwd=ROOT))
            exes = {}
            for pname, _, cc in PEERS:
                exe = os.path.join(tmp, pname)
                try:
                    run(peer_build(cc, drv, exe))
                    exes[pname] = exe
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print("WARNING: %s: %s does not build: %s" % (name, pname, str(e)[:300]), file=sys.stderr)
            times = {c: [] for c in [p[0] for p in PEERS] + [o[0] for o in OURS]}
            wrong = set()
            compile_ms = []
            ref = os.path.join(tmp, "out-gcc")
            for r in range(a.runs):
                for pname, threads, _ in PEERS:
                    if pname not in exes or pname in wrong:
                        continue
                    od = os.path.join(tmp, "out-" + pname)
                    os.makedirs(od, exist_ok=True)
                    try:
                        out = run([exes[pname], inp, od] + named, env=env2 if threads == 2 else None)
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print("WARNING: %s %s failed: %s" % (name, pname, str(e)[:300]), file=sys.stderr)
                        wrong.add(pname)
                        continue
                    times[pname].append(field(out, "time_ms"))
                    if pname != "gcc" and not same_dirs(od, ref):
                        print("WARNING: %s: %s output differs from gcc -O3" % (name, pname), file=sys.stderr)
                        wrong.add(pname)
                for oname, _, flags in OURS:
                    if oname in wrong:
                        continue
                    od = os.path.join(tmp, "out-" + oname)
                    out = run([T, "run", path, "--entry", entry] + flags + args + ins + ["--out", od], cwd=ROOT)
                    times[oname].append(field(out, "time_ms"))
                    if oname == "opt":
                        compile_ms.append((field(out, "poly_ms") or 0.0) + (field(out, "compile_ms") or 0.0))
                    if not same_dirs(od, ref):
                        print("WARNING: %s: %s output differs from gcc -O3" % (name, oname), file=sys.stderr)
                        wrong.add(oname)
            med = {c: (statistics.median(v) if v and c not in wrong else None) for c, v in times.items()}
            row = {"name": name, "size": " ".join(named), "med": med, "compile": statistics.median(compile_ms) if compile_ms else float("nan")}
            rows.append(row)
            print("%-14s " % name + "  ".join("%s %s" % (c, ("%.1f" % v) if v else "wrong") for c, v in med.items())
                  + "  compile %.1f ms" % row["compile"], flush=True)

    def best(med, names):
        vs = [med[n] for n in names if med.get(n)]
        return min(vs) if vs else None

    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
    fmt = lambda v: ("%.1f" % v) if v else "wrong"
    lines = [
        "| kernel | size | gcc -O3 | Graphite | Polly | Tessera jit | **opt** | opt / best peer | Graphite 2t | Polly 2t | **opt 2t** | opt 2t / best peer 2t | opt 2t / opt 1t | opt compile (ms) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    r1, r2, sp, comp = [], [], [], []
    for row in rows:
        m = row["med"]
        b1 = best(m, ["gcc", "graphite", "polly"])
        b2 = best(m, ["gcc", "graphite", "polly", "graphite-2t", "polly-2t"])
        q1 = m["opt"] / b1 if m["opt"] and b1 else None
        q2 = m["opt-2t"] / b2 if m["opt-2t"] and b2 else None
        s = m["opt"] / m["opt-2t"] if m["opt"] and m["opt-2t"] else None
        if q1: r1.append(q1)
        if q2: r2.append(q2)
        if s: sp.append(s)
        comp.append(row["compile"])
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |" % (
            row["name"], row["size"], fmt(m["gcc"]), fmt(m["graphite"]), fmt(m["polly"]), fmt(m["jit"]),
            fmt(m["opt"]), ("%.2f" % q1) if q1 else "-", fmt(m["graphite-2t"]), fmt(m["polly-2t"]),
            fmt(m["opt-2t"]), ("%.2f" % q2) if q2 else "-", ("%.2fx" % s) if s else "-", row["compile"]))
    if rows:
        lines.append("| **geomean** | | | | | | | **%.3f** | | | | **%.3f** | **%.2fx** | median %.1f |" % (
            geo(r1), geo(r2), geo(sp), statistics.median(comp)))
    emit("\n".join(lines), a.md, "Machine: %s; runs=%d (median, interleaved); times in ms" % (machine(), a.runs))


if __name__ == "__main__":
    main()
