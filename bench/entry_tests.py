#!/usr/bin/env python3
"""Which optimised code runs at the benchmark sizes: for every example kernel with a `// BENCH:`
line, every SCoP's run-time assumption test (`tessera explain`: "run-time check at entry") is
evaluated at the BENCH parameter values. A test that fails there means the original code runs
and the kernel loses its optimisation; tests over counters of loops around the SCoP (SCoPs
inside non-affine code) are listed, not evaluated. Also prints the largest number of
comparisons one test makes (its cost per SCoP entry).

    python3 bench/entry_tests.py
"""
import re, subprocess, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import kernels, header, T, ROOT  # noqa: E402
os.chdir(ROOT)
tot = 0; ok = 0; none = 0; fails = []
maxconj = 0
for name, path, entry in kernels(''):
    bench = header(path, 'BENCH')
    if not bench: continue
    args = bench[0].split()
    vals = {}
    for i, a in enumerate(args):
        if a == '-D':
            k, v = args[i+1].split('=')
            vals[k] = float(v) if '.' in v else int(v)
    out = subprocess.run([T, 'explain', path, '--entry', entry], capture_output=True, text=True).stdout
    for m in re.finditer(r'run-time check at entry \(else the original code runs\): (.*)', out):
        t = m.group(1).strip(); tot += 1
        if t == 'none needed': none += 1; ok += 1; continue
        n = t.count('<') + t.count('>') + t.count('==')
        maxconj = max(maxconj, n)
        e = t.replace('&&', ' and ').replace('||', ' or ').replace('!(', ' not (')
        try:
            r = eval(e, {}, dict(vals))
        except Exception as ex:
            fails.append((name, 'inside a loop (' + str(ex) + ')', t)); continue
        if r: ok += 1
        else: fails.append((name, 'FAILS at BENCH sizes', t))
print('SCoP entry tests:', tot, 'pass at BENCH sizes:', ok, '(of which none needed:', none, ') max comparisons in one test:', maxconj)
for f in fails: print(f)
