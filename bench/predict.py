#!/usr/bin/env python3
"""Predicted (before running) against measured time of the affine example kernels.

`tessera predict --check` per kernel of examples/kernels whose entry has a top-level SCoP, at
its RUN size times --scale (integers of at least 16 scaled): statement instances counted by
isl at that size, their cost fitted on counted runs at 1/3..1/12 of it under the machine
profile's CMW-M, then the call itself timed (median of --runs). Needs a profile
(`tessera calibrate`).

Usage: python3 bench/predict.py [--scale 2] [--runs 3] [--md FILE]
"""
import argparse, glob, os, re, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESSERA = os.path.join(ROOT, "target", "release", "tessera")


def header(text, key):
    m = re.search(r"^// %s: (.*)$" % key, text, re.M)
    return m.group(1).strip() if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--md", default="")
    a = ap.parse_args()
    lines = []
    say = lambda s="": (print(s, flush=True), lines.append(s))
    say("| kernel | size | measured ms | predicted ms (CMW-M) | / measured | with first-task k (ms) | / measured | prediction took (ms) |")
    say("|---|---|---|---|---|---|---|---|")
    ratios, kratios, skipped = [], [], []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "kernels", "*.c"))):
        text = open(path).read()
        entry, run = header(text, "ENTRY"), header(text, "RUN")
        if not entry or not run:
            continue
        defs = re.findall(r"-D\s*(\w+)=(\S+)", run)
        sd = []
        for n, v in defs:
            try:
                x = int(v)
                if x >= 16:
                    v = str(int(round(x * a.scale)))
            except ValueError:
                pass
            sd.append((n, v))
        cmd = [TESSERA, "predict", path, "--entry", entry, "--check", "--runs", str(a.runs)]
        for n, v in sd:
            cmd += ["-D", "%s=%s" % (n, v)]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        name = os.path.basename(path)[:-2]
        if p.returncode != 0:
            skipped.append("%s: %s" % (name, (p.stderr or p.stdout).strip().splitlines()[-1]))
            continue
        pm = float(re.search(r"^predicted: ([0-9.]+) ms", p.stdout, re.M).group(1))
        took = float(re.search(r"prediction took ([0-9.]+) ms", p.stdout).group(1))
        mm = float(re.search(r"^measured: ([0-9.]+) ms", p.stdout, re.M).group(1))
        km = re.search(r"^predicted with the first-task k: ([0-9.]+) ms", p.stdout, re.M)
        km = float(km.group(1)) if km else float("nan")
        ratios.append((name, pm / mm))
        kratios.append((name, km / mm))
        say("| %s | %s | %.3f | %.3f | %.2f | %.3f | %.2f | %.0f |" % (
            name, " ".join("%s=%s" % d for d in sd), mm, pm, pm / mm, km, km / mm, took))
    say()
    for what, rs in (("CMW-M", ratios), ("CMW-M with the first-task k", kratios)):
        errs = [abs(r - 1) for _, r in rs if r == r]
        if not errs:
            continue
        within = sum(e <= 0.25 for e in errs)
        say("%s, %d kernels: median |predicted/measured - 1| = %.1f%%, within 25%%: %d (%.0f%%)" % (
            what, len(errs), 100 * statistics.median(errs), within, 100.0 * within / len(errs)))
    if skipped:
        say()
        say("Not predicted (no top-level SCoP, or other reasons):")
        for s in skipped:
            say("- " + s)
    if a.md:
        open(a.md, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
