#!/usr/bin/env python3
"""Benchmark harness (not a test): PolyBench/C 4.2.1's kernels *as written* through Tessera.

PolyBench is not part of this repository (its code is not ours to commit): point --src at a
checkout of PolyBench/C 4.2.1. For every benchmark of the suite:
  1. the benchmark's .c is preprocessed as PolyBench's own build would
     (gcc -E -P -DPOLYBENCH_USE_C99_PROTO -D<DATASET>_DATASET -I utilities), and the function
     `kernel_<name>` is cut out of the result, nothing else changed (counters declared at the
     top, `#pragma scop`, its loops and types as PolyBench writes them) but `#include
     <math.h>` put before it (the benchmark had it through polybench.h), and the typedefs
     of the benchmark's header that the kernel uses (nussinov's `typedef char base;`);
  2. the integer size arguments are read from the preprocessed `main` (`int n = 500;`),
     floating-point scalars get 1.5 (the values do not change the loop structure), arrays are
     filled by `--init random:1`;
  3. `tessera explain` counts the SCoPs, those that keep their code, and the loop nests that
     are not SCoPs;
  4. gcc -O3 -march=native -ffp-contract=off -fwrapv runs the cut-out kernel through the
     generated driver on the same inputs; `--mode jit`, `--mode opt --threads 1` and
     `--threads 2` run interleaved, median of --runs; every output is compared with gcc's bit
     for bit (NaNs canonicalised by the checksum) and a mode whose output differs is `wrong`.
     Each Tessera run calls the kernel --repeat times (default 7) on fresh copies of the
     inputs (`tessera run --repeat`): the first call (cold caches, sleeping workers: what one
     call costs, as gcc's driver measures it) and the median of calls 5 to 7 (settled: warm,
     and after the JIT has timed both versions of each SCoP, the optimised code and the
     code as written, on calls 1 to 4 and kept the faster) are both reported.

With --peers, the same driver is also built by the other compilers of this machine, each
output compared with gcc -O3's bit for bit (a peer that differs is `wrong` and left out):
       gcc -O3 -march=native -floop-nest-optimize                   (Graphite, 1 thread)
       ... -floop-parallelize-all -ftree-parallelize-loops=2        (Graphite, 2 threads)
       clang-14 -O3 -march=native -mllvm -polly                     (Polly, 1 thread)
       ... -mllvm -polly-parallel -lgomp (-polly-pattern-matching-based-opts=false: Polly's
           parallel matmul pattern races here)                      (Polly, 2 threads)
all with -ffp-contract=off -fwrapv, run interleaved with the rest (OMP_NUM_THREADS=2 for the
2-thread peers); a second table gives each peer's time, the best peer per thread count and
the ratio of Tessera's time to it (first call and warm). Pluto is not built here.

Usage: python3 bench/polybench.py --src /path/to/PolyBenchC-4.2.1 [--dataset MEDIUM] [--runs 3]
       [--repeat 5] [--only gemm,lu] [--variant=--no-pack] [--peers] [--md out.md]
"""
import math, os, re, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import PEERS as ALL_PEERS, PEER_FLAGS, T, arg_parser, emit, field, machine, peer_build, same_dirs, \
    run as _run  # noqa: E402

GCC = ["gcc", "-O3", "-march=native"] + PEER_FLAGS
# Graphite and Polly, 1 and 2 threads (`--peers`); gcc -O3 is always run.
PEERS = [p for p in ALL_PEERS if p[0] != "gcc"]
MODES = [
    ("jit", ["--mode", "jit"]),
    ("opt", ["--mode", "opt", "--threads", "1"]),
    ("opt-2t", ["--mode", "opt", "--threads", "2"]),
]
TIMEOUT = 600


def run(cmd, **kw):
    return _run(cmd, timeout=TIMEOUT, **kw)


def benchmarks(src, only):
    keep = only.split(",") if only else None
    for d, _, files in sorted(os.walk(src)):
        if "utilities" in d:
            continue
        for f in sorted(files):
            name = f[:-2]
            if f.endswith(".c") and os.path.basename(d) == name and (keep is None or name in keep):
                yield name, os.path.join(d, f)


def cut_kernel(text, name):
    """The text of `void kernel_<name>(...) { ... }` in preprocessed source."""
    m = re.search(r"(?m)^void kernel_%s\s*\(" % re.escape(name.replace("-", "_")), text)
    if not m:
        raise RuntimeError("no kernel_%s in the preprocessed source" % name)
    i = text.index("{", m.end())
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                # PolyBench's sources get <math.h> through polybench.h; the typedefs the
                # kernel uses come from the benchmark's header (nussinov's `base`).
                body = text[m.start():j + 1]
                words = set(re.findall(r"\w+", body))
                tds = [t for t, nm in re.findall(r"(?m)^(typedef [\w ]+? (\w+);)$", text) if nm in words]
                return "#include <math.h>\n" + "".join(t + "\n" for t in tds) + body + "\n"
    raise RuntimeError("unbalanced braces in kernel_%s" % name)


def size_args(text, kernel):
    """-D arguments for the kernel's scalar parameters."""
    head = kernel[kernel.index("(") + 1:kernel.index(")")]
    ints = dict(re.findall(r"\bint\s+(\w+)\s*=\s*(\d+)\s*;", text))
    args = []
    for p in head.split(","):
        p = p.strip()
        if "[" in p:
            continue
        ty, nm = p.split()[-2], p.split()[-1]
        if ty in ("int", "long"):
            if nm not in ints:
                raise RuntimeError("no size for %s" % nm)
            args += ["-D", "%s=%s" % (nm, ints[nm])]
        else:
            args += ["-D", "%s=1.5" % nm]
    return args


def explain_counts(path, entry):
    r = subprocess.run([T, "explain", path, "--entry", entry], capture_output=True, text=True, timeout=TIMEOUT)
    out = r.stdout + r.stderr
    scops = len(re.findall(r"(?m)^SCoP \d+ in", out))
    kept = len(re.findall(r"(?m)^  kept the original code", out))
    rejected = re.findall(r"(?m)^not a SCoP in `[^`]*` at [^:]*:\d+:\d+: (.*)$", out)
    return scops, kept, rejected


def main():
    ap = arg_parser(3)
    ap.add_argument("--src", required=True, help="a PolyBench/C 4.2.1 checkout")
    ap.add_argument("--dataset", default="MEDIUM")
    ap.add_argument("--repeat", type=int, default=7, help="calls per Tessera run (first: cold; median of calls 5..: settled)")
    ap.add_argument("--variant", default=None,
                    help="extra options for `--mode opt` (e.g. `--no-pack`), run interleaved with the others on 1 and 2 "
                         "threads; the table gains their warm times and their ratio to opt's")
    ap.add_argument("--peers", action="store_true",
                    help="also build and time Graphite and Polly (1 and 2 threads) on the same driver")
    a = ap.parse_args()
    peers = PEERS if a.peers else []
    env2 = dict(os.environ, OMP_NUM_THREADS="2")
    if a.variant:
        MODES.extend([("var", ["--mode", "opt", "--threads", "1"] + a.variant.split()),
                      ("var-2t", ["--mode", "opt", "--threads", "2"] + a.variant.split())])
    utils = os.path.join(a.src, "utilities")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cfile in benchmarks(a.src, a.only):
            entry = "kernel_" + name.replace("-", "_")
            pre = run(["gcc", "-E", "-P", "-DPOLYBENCH_USE_C99_PROTO", "-D%s_DATASET" % a.dataset, "-I", utils, cfile])
            path = os.path.join(tmp, name + ".c")
            row = {"name": name, "med": {}, "note": ""}
            rows.append(row)
            try:
                kernel = cut_kernel(pre, name)
                open(path, "w").write(kernel)
                args = size_args(pre, kernel) + ["--init", "random:1"]
                row["size"] = " ".join(x for x in args[:-2] if x != "-D")
                run([T, "check", path])
            except (RuntimeError, ValueError, IndexError) as e:
                row["note"] = "not accepted: " + str(e).strip().splitlines()[-1][:120]
                print("%-16s %s" % (name, row["note"]), flush=True)
                continue
            row["scops"], row["kept"], row["rejected"] = explain_counts(path, entry)
            inp = os.path.join(tmp, name + "-in")
            run([T, "run", path, "--entry", entry, "--save-inputs", inp, "--mode", "jit"] + args)
            ins = []
            for f in sorted(os.listdir(inp)):
                ins += ["--input", "%s=%s" % (f[:-4], os.path.join(inp, f))]
            drv = os.path.join(tmp, name + "-driver.c")
            open(drv, "w").write(run([T, "emit", path, "--entry", entry, "--target", "driver"]))
            exe = os.path.join(tmp, name + "-gcc")
            run(GCC + [drv, "-o", exe, "-lm"])
            built = {}
            for pname, _, cc in peers:
                pexe = os.path.join(tmp, "%s-%s" % (name, pname))
                try:
                    run(peer_build(cc, drv, pexe))
                    built[pname] = pexe
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    print("WARNING: %s: %s does not build: %s" % (name, pname, str(e)[:200]), file=sys.stderr)
            named = [x for x in args[:-2] if x != "-D"]
            ref = os.path.join(tmp, name + "-out-gcc")
            os.makedirs(ref, exist_ok=True)
            times = {c: [] for c in ["gcc"] + [p[0] for p in peers] + [m[0] for m in MODES]}
            warm = {m[0]: [] for m in MODES}
            wrong = set()
            for _ in range(a.runs):
                times["gcc"].append(field(run([exe, inp, ref] + named), "time_ms"))
                for pname, pth, _ in peers:
                    if pname in wrong or pname not in built:
                        wrong.add(pname)
                        continue
                    od = os.path.join(tmp, "%s-out-%s" % (name, pname))
                    os.makedirs(od, exist_ok=True)
                    try:
                        out = run([built[pname], inp, od] + named, env=env2 if pth == 2 else None)
                        times[pname].append(field(out, "time_ms"))
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print("WARNING: %s %s failed: %s" % (name, pname, str(e)[:300]), file=sys.stderr)
                        wrong.add(pname)
                        continue
                    if not same_dirs(od, ref):
                        print("WARNING: %s: %s output differs from gcc -O3" % (name, pname), file=sys.stderr)
                        wrong.add(pname)
                for mname, flags in MODES:
                    if mname in wrong:
                        continue
                    od = os.path.join(tmp, "%s-out-%s" % (name, mname))
                    try:
                        out = run([T, "run", path, "--entry", entry, "--repeat", str(a.repeat)] + flags + args[:-2] + ins
                                  + ["--out", od])
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print("WARNING: %s %s failed: %s" % (name, mname, str(e)[:300]), file=sys.stderr)
                        wrong.add(mname)
                        continue
                    calls = [float(x) for x in re.search(r"(?m)^times_ms:(.*)$", out).group(1).split()] \
                        if a.repeat > 1 else [field(out, "time_ms")]
                    times[mname].append(calls[0])
                    settled = calls[4:] if len(calls) > 4 else calls[1:] or calls
                    warm[mname].append(statistics.median(settled))
                    if not same_dirs(od, ref):
                        print("WARNING: %s: %s output differs from gcc -O3" % (name, mname), file=sys.stderr)
                        wrong.add(mname)
            row["med"] = {c: (statistics.median(v) if v and c not in wrong else None) for c, v in times.items()}
            row["warm"] = {c: (statistics.median(v) if v and c not in wrong else None) for c, v in warm.items()}
            print("%-16s scops %d kept %d rejected %d  " % (name, row["scops"], row["kept"], len(row["rejected"]))
                  + "  ".join("%s %s" % (c, ("%.1f" % v) if v else "wrong") for c, v in row["med"].items()), flush=True)

    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
    fmt = lambda v: ("%.3g" % v) if v else "wrong"
    var = " `%s`" % a.variant if a.variant else ""
    lines = [
        "| kernel | sizes | SCoPs (kept as is) | loop nests not SCoPs | gcc -O3 | jit | opt | opt 2t | jit warm | opt warm | opt 2t warm "
        "| jit / gcc | opt 2t / jit | opt 2t / jit warm | opt 2t / gcc |"
        + ("%s warm |%s 2t warm | opt warm /%s | opt 2t warm /%s 2t |" % (var, var, var, var) if var else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if var else ""),
    ]
    ratio = lambda x, y: x / y if x and y else None
    rfmt = lambda r: ("%.2f" % r) if r else "-"
    q = [[], [], [], [], [], []]
    for row in rows:
        if row["note"]:
            lines.append("| %s | | %s |" % (row["name"], row["note"]) + " |" * (16 if var else 12))
            continue
        m, w = row["med"], row["warm"]
        rs = [ratio(m["jit"], m["gcc"]), ratio(m["opt-2t"], m["jit"]), ratio(w["opt-2t"], w["jit"]), ratio(m["opt-2t"], m["gcc"])]
        if var:
            rs += [ratio(w["opt"], w["var"]), ratio(w["opt-2t"], w["var-2t"])]
        for qq, r in zip(q, rs):
            if r:
                qq.append(r)
        rej = "; ".join(sorted(set(row["rejected"])))[:160]
        lines.append("| %s | %s | %d (%d) | %d %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["name"], row["size"], row["scops"], row["kept"], len(row["rejected"]), ("(" + rej + ")") if rej else "",
            fmt(m["gcc"]), fmt(m["jit"]), fmt(m["opt"]), fmt(m["opt-2t"]), fmt(w["jit"]), fmt(w["opt"]), fmt(w["opt-2t"]),
            " | ".join(rfmt(r) for r in rs[:4]))
            + (" %s | %s | %s | %s |" % (fmt(w["var"]), fmt(w["var-2t"]), rfmt(rs[4]), rfmt(rs[5])) if var else ""))
    lines.append("| **geomean** | | | | | | | | | | | %s |" % " | ".join("**%.3f**" % geo(qq) for qq in q[:4])
                 + (" | | %s |" % " | ".join("**%.3f**" % geo(qq) for qq in q[4:]) if var else ""))
    if peers:
        lines += ["", "Against the peers (times in ms; best 1t: the fastest correct of gcc -O3, Graphite and "
                  "Polly on 1 thread; best 2t: the fastest correct of all; ratios are the peer's time over "
                  "Tessera's, above 1 where Tessera is faster):", ""]
        lines.append("| kernel | gcc -O3 | " + " | ".join(p[0] for p in peers)
                     + " | opt | opt 2t | opt warm | opt 2t warm | best 1t | best 2t | best 1t / opt | best 2t / opt 2t "
                       "| best 1t / opt warm | best 2t / opt 2t warm |")
        lines.append("|---" * (len(peers) + 12) + "|")
        qp = [[], [], [], []]
        for row in rows:
            if row["note"]:
                continue
            m, w = row["med"], row["warm"]
            one = [m[c] for c in ["gcc"] + [p[0] for p in peers if p[1] == 1] if m.get(c)]
            two = one + [m[p[0]] for p in peers if p[1] == 2 and m.get(p[0])]
            b1, b2 = (min(one) if one else None), (min(two) if two else None)
            rs = [ratio(b1, m["opt"]), ratio(b2, m["opt-2t"]), ratio(b1, w["opt"]), ratio(b2, w["opt-2t"])]
            for qq, r in zip(qp, rs):
                if r:
                    qq.append(r)
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                row["name"], fmt(m["gcc"]), " | ".join(fmt(m.get(p[0])) for p in peers),
                fmt(m["opt"]), fmt(m["opt-2t"]), fmt(w["opt"]), fmt(w["opt-2t"]), fmt(b1), fmt(b2),
                " | ".join(rfmt(r) for r in rs)))
        lines.append("| **geomean** |" + " |" * (len(peers) + 7) + " %s |" % " | ".join("**%.3f**" % geo(qq) for qq in qp))
    emit("\n".join(lines), a.md, "Machine: %s; PolyBench/C 4.2.1 %s_DATASET as written; runs=%d (median, interleaved), %d calls per Tessera run "
         "(first call; warm: median of calls 5 on, after the choice of versions); times in ms" % (machine(), a.dataset, a.runs, a.repeat))


if __name__ == "__main__":
    main()
