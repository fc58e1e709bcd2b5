#!/usr/bin/env python3
"""Compiled data operators (`tessera query`) side by side with numpy, Polars and DuckDB.

Workloads of issue 17 (sizes scaled by --scale; 1.0 = the issue's sizes): filter-count
(a + 2b - c) > 0; a > 0 AND b < 0 at selectivities 1/50/99%; group-by sum,count with
10K keys (1M rows) and on the big table; sort int32 (200K and 10M); top-100 of f64.
Columns are .npy files (Tessera reads them into Arrow arrays; Polars and DuckDB get the
same numpy arrays in memory). Each engine's time is the median of --runs runs after one
warm-up, excluding data loading and (for Tessera) the one-off compile, which is reported
separately. Results are checked against numpy's before any time is quoted.

Needs the Python environment of scripts/setup.sh plus numpy and polars:
    target/pyenv/bin/pip install numpy polars pyarrow
    target/pyenv/bin/python bench/operators.py --threads 1 --scale 0.2
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import duckdb
import numpy as np
import polars as pl

TESSERA = os.environ.get("TESSERA_BIN", "target/release/tessera")


def timed(f, runs):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        r = f()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), r


def tessera(sql, tables, threads, runs):
    cmd = [TESSERA, "query", sql, "--threads", str(threads), "--repeat", str(runs + 1), "--explain"]
    for n, p in tables.items():
        cmd += ["--table", f"{n}={p}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    ts = [float(x) for x in re.findall(r"run \d+: ([0-9.]+) ms", p.stderr)][1:]
    jit = float(re.search(r"JIT ([0-9.]+) ms", p.stdout).group(1))
    return statistics.median(ts), jit, p.stdout


def cells(out):
    """The numbers in the result table `tessera query` prints after its run log."""
    tail = out[out.find("\nrun:"):]
    lines = [ln for ln in tail.splitlines() if ln.startswith("|")][1:]
    return [float(x) for ln in lines for x in ln.strip("|").split("|")]


HAND = None


def hand(args, runs):
    """Median ms of the hand-written C baseline (bench/operators_hand.c), or NaN."""
    if HAND is None:
        return float("nan")
    p = subprocess.run([HAND, args[0], str(runs)] + [str(x) for x in args[1:]], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    return float(p.stdout.split()[0])


def line(name, t_ms, jit, hc, nk, pk, dk):
    print(f"{name:40s} tessera {t_ms:8.2f} (JIT {jit:5.1f})  hand-C {hc:8.2f}  numpy {nk:8.2f}  polars {pk:8.2f}  duckdb {dk:8.2f}", flush=True)


def main():
    global HAND
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=0.2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    big = int(100_000_000 * a.scale)
    tmp = tempfile.mkdtemp(prefix="tessera-ops-")
    exe = os.path.join(tmp, "hand")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "operators_hand.c")
    if subprocess.run(["gcc", "-O3", "-march=native", "-o", exe, src]).returncode == 0:
        HAND = exe
    print(f"# rows: big {big}, threads {a.threads}, runs {a.runs} (median), {os.uname().machine}, {os.cpu_count()} cores")
    cols = {c: rng.uniform(-1, 1, big) for c in "abc"}
    d = os.path.join(tmp, "big")
    os.mkdir(d)
    for c, v in cols.items():
        np.save(os.path.join(d, f"{c}.npy"), v)
    tables = {"t": d}
    con = duckdb.connect()
    con.execute(f"SET threads TO {a.threads}")
    os.environ["POLARS_MAX_THREADS"] = str(a.threads)
    df = pl.DataFrame(cols)
    con.register("t", df.to_arrow())
    rows = []

    def row(name, sql, ref, np_f, pl_f, check, hargs):
        t_ms, jit, out = tessera(sql, tables, a.threads, a.runs)
        got = cells(out)
        if not check(got, ref):
            raise RuntimeError(f"{name}: Tessera {got} vs numpy {ref}")
        dk, dr = timed(lambda: con.execute(sql).fetchall(), a.runs)
        nk, _ = timed(np_f, a.runs) if np_f else (float("nan"), None)
        pk, _ = timed(pl_f, a.runs)
        hc = hand(hargs, a.runs)
        rows.append((name, t_ms, jit, hc, nk, pk, dk))
        line(name, t_ms, jit, hc, nk, pk, dk)

    A, B, C = cols["a"], cols["b"], cols["c"]
    ref = int(np.count_nonzero((A + 2 * B - C) > 0))
    row("filter (a+2b-c)>0 count", "SELECT count(*) FROM t WHERE (a + 2*b - c) > 0", ref,
        lambda: np.count_nonzero((A + 2 * B - C) > 0),
        lambda: df.select(((pl.col("a") + 2 * pl.col("b") - pl.col("c")) > 0).sum()).item(),
        lambda g, r: g and int(g[0]) == r,
        ["count_expr"] + [os.path.join(d, f"{c}.npy") for c in "abc"])
    for sel, thr in (("1%", -0.98), ("50%", 0.0), ("99%", 0.98)):
        # a > 0 AND b < t: selectivity of the AND = P(a>0) P(b<t); shift a's threshold too.
        ta = {"1%": 0.96, "50%": -1.0, "99%": -0.99}[sel]
        tb = {"1%": 1.0, "50%": 0.0, "99%": 1.0}[sel]
        sql = f"SELECT count(*) FROM t WHERE a > {ta} AND b < {tb}"
        ref = int(np.count_nonzero((A > ta) & (B < tb)))
        row(f"a>{ta} AND b<{tb} ({ref / big:.0%})", sql, ref,
            lambda: np.count_nonzero((A > ta) & (B < tb)),
            lambda: df.select(((pl.col("a") > ta) & (pl.col("b") < tb)).sum()).item(),
            lambda g, r: g and int(g[0]) == r,
            ["count_and", os.path.join(d, "a.npy"), os.path.join(d, "b.npy"), ta, tb])
    # Group-by on 1M rows, 10K keys; and on the big table.
    for n, name in ((1_000_000, "group-by sum,count 1M rows 10K keys"), (big, f"group-by {big} rows 10K keys")):
        gd = os.path.join(tmp, f"g{n}")
        os.mkdir(gd)
        k = rng.integers(0, 10_000, n, dtype=np.int64)
        v = rng.uniform(0, 1, n)
        np.save(os.path.join(gd, "k.npy"), k)
        np.save(os.path.join(gd, "v.npy"), v)
        gdf = pl.DataFrame({"k": k, "v": v})
        con.register("g", gdf.to_arrow())
        sql = "SELECT k, sum(v), count(*) FROM g GROUP BY k"
        ref = float(v.sum())
        t_ms, jit, out = tessera(sql, {"g": gd}, a.threads, a.runs)
        if "10000 groups" not in out:
            raise RuntimeError(out[-2000:])
        dk, _ = timed(lambda: con.execute(sql).fetchall(), a.runs)
        nk, _ = timed(lambda: (np.bincount(k, weights=v, minlength=10_000), np.bincount(k, minlength=10_000)), a.runs)
        pk, _ = timed(lambda: gdf.group_by("k").agg(pl.col("v").sum(), pl.len()), a.runs)
        hc = hand(["groupby", os.path.join(gd, "k.npy"), os.path.join(gd, "v.npy"), 10_000], a.runs)
        rows.append((name, t_ms, jit, hc, nk, pk, dk))
        line(name, t_ms, jit, hc, nk, pk, dk)
    # Group-by on skewed (Zipf) keys spread over the int64 range: a hash table, not an array.
    n = big
    gd = os.path.join(tmp, "gz")
    os.mkdir(gd)
    k = (rng.zipf(1.3, n) % 10_000).astype(np.int64) * 1_000_003 - 5_000_000_000
    v = rng.uniform(0, 1, n)
    np.save(os.path.join(gd, "k.npy"), k)
    np.save(os.path.join(gd, "v.npy"), v)
    gdf = pl.DataFrame({"k": k, "v": v})
    con.register("g", gdf.to_arrow())
    sql = "SELECT k, sum(v), count(*) FROM g GROUP BY k"
    ngroups = len(np.unique(k))
    t_ms, jit, out = tessera(sql, {"g": gd}, a.threads, a.runs)
    if f"{ngroups} groups" not in out or "groups Hash" not in out:
        raise RuntimeError(out[-2000:])
    dk, _ = timed(lambda: con.execute(sql).fetchall(), a.runs)

    def np_hash():
        u, inv = np.unique(k, return_inverse=True)
        return np.bincount(inv, weights=v), np.bincount(inv)

    nk, _ = timed(np_hash, 1)
    pk, _ = timed(lambda: gdf.group_by("k").agg(pl.col("v").sum(), pl.len()), a.runs)
    name = f"group-by {n} rows, Zipf keys (hash), {ngroups} groups"
    rows.append((name, t_ms, jit, float("nan"), nk, pk, dk))
    line(name, t_ms, jit, float("nan"), nk, pk, dk)
    # Sort int32; top-100 of f64.
    for n in (200_000, int(10_000_000 * max(a.scale, 0.1))):
        sd = os.path.join(tmp, f"s{n}")
        os.mkdir(sd)
        x = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32)
        np.save(os.path.join(sd, "x.npy"), x)
        sdf = pl.DataFrame({"x": x})
        con.register("s", sdf.to_arrow())
        sql = "SELECT x FROM s ORDER BY x"
        t_ms, jit, _ = tessera(sql, {"s": sd}, a.threads, a.runs)
        dk, _ = timed(lambda: con.execute(sql).fetchnumpy(), a.runs)
        nk, _ = timed(lambda: np.sort(x), a.runs)
        pk, _ = timed(lambda: sdf.sort("x"), a.runs)
        hc = hand(["sort_i32", os.path.join(sd, "x.npy")], a.runs)
        rows.append((f"sort {n} int32", t_ms, jit, hc, nk, pk, dk))
        line(f"sort {n} int32", t_ms, jit, hc, nk, pk, dk)
    n = int(10_000_000 * max(a.scale, 0.1))
    sql = "SELECT a FROM t ORDER BY a DESC LIMIT 100"
    t_ms, jit, out = tessera(f"SELECT a FROM t ORDER BY a DESC LIMIT 100", tables, a.threads, a.runs)
    dk, _ = timed(lambda: con.execute(sql).fetchall(), a.runs)
    nk, _ = timed(lambda: np.sort(np.partition(A, -100)[-100:]), a.runs)
    pk, _ = timed(lambda: df.select(pl.col("a").top_k(100)), a.runs)
    hc = hand(["topk", os.path.join(d, "a.npy"), 100], a.runs)
    rows.append((f"top-100 of {big} f64", t_ms, jit, hc, nk, pk, dk))
    line(f"top-100 of {big} f64", t_ms, jit, hc, nk, pk, dk)
    print("\n| workload | Tessera (ms) | JIT compile (ms) | hand C (1 thr) | numpy | Polars | DuckDB | Tessera / best library | Tessera / hand C |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, t, j, hc, nk, pk, dk in rows:
        best = min(x for x in (nk, pk, dk) if x == x)
        print(f"| {name} | {t:.2f} | {j:.1f} | {hc:.2f} | {nk:.2f} | {pk:.2f} | {dk:.2f} | {t / best:.2f} | {t / hc:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
