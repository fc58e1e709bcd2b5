"""Helpers shared by the benchmark harnesses (not tests)."""
import argparse, datetime, filecmp, os, platform, re, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The binary under test; TESSERA_BIN names another (a frozen copy, so that rebuilding the tree
# during a long run does not change what is measured).
T = os.environ.get("TESSERA_BIN") or os.path.join(ROOT, "target", "release", "tessera")

# The C compilers Tessera is measured against, each followed by PEER_FLAGS (Tessera's FP and
# integer semantics without --fast-math, so that every output compares bit for bit): name,
# threads, command. Polly's parallel mode with its matmul pattern computes gemm-like kernels
# wrong on this machine (a race); -polly-pattern-matching-based-opts=false makes it right.
PRELUDE = os.path.join(ROOT, "tests", "gcc-prelude.h")
PEER_FLAGS = ["-ffp-contract=off", "-fwrapv", "-std=gnu99", "-w", "-include", PRELUDE]
PEERS = [
    ("gcc", 1, ["gcc", "-O3", "-march=native"]),
    ("graphite", 1, ["gcc", "-O3", "-march=native", "-floop-nest-optimize"]),
    ("polly", 1, ["clang-14", "-O3", "-march=native", "-mllvm", "-polly"]),
    ("graphite-2t", 2, ["gcc", "-O3", "-march=native", "-floop-nest-optimize",
                        "-floop-parallelize-all", "-ftree-parallelize-loops=2"]),
    ("polly-2t", 2, ["clang-14", "-O3", "-march=native", "-mllvm", "-polly", "-mllvm", "-polly-parallel",
                     "-mllvm", "-polly-pattern-matching-based-opts=false"]),
]


def peer_build(cc, src, exe):
    """The command that builds `src` into `exe` with a peer's compiler command `cc`: its flags,
    then the libraries (libgomp for Polly's parallel code, after the source so that the linker
    keeps it)."""
    return cc + PEER_FLAGS + [src, "-o", exe, "-lm"] + (["-lgomp"] if "-polly-parallel" in cc else [])


def header(path, key):
    """The values of the `// KEY: value` header lines of a kernel file."""
    vals = []
    for line in open(path):
        m = re.match(r"\s*//\s*%s:\s*(.*)" % key, line)
        if m:
            vals.append(m.group(1).strip())
    return vals


def kernels(only=""):
    """The example kernels in name order, as (name, path, entry); `only`: comma-separated
    names to keep (all when empty)."""
    kdir = os.path.join(ROOT, "examples", "kernels")
    keep = only.split(",") if only else None
    for fn in sorted(os.listdir(kdir)):
        if not fn.endswith(".c"):
            continue
        name = fn[:-2]
        if keep is not None and name not in keep:
            continue
        path = os.path.join(kdir, fn)
        yield name, path, header(path, "ENTRY")[0]


def run(cmd, env=None, timeout=None, **kw):
    """Runs `cmd`, returns its standard output; a non-zero exit raises RuntimeError."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def field(out, key):
    """The number on the `key: value` line of a run's output, or None."""
    m = re.search(r"^%s:\s*([-0-9.eE+]+)" % key, out, re.M)
    return float(m.group(1)) if m else None


def same_dirs(a, b):
    """Whether two output directories hold the same files, byte for byte."""
    names = sorted(os.listdir(a))
    return names == sorted(os.listdir(b)) and all(
        filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)


def arg_parser(runs):
    """The options every harness takes: --runs (default `runs`), --only, --md."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--only", default="", help="comma-separated names to run (all when empty)")
    ap.add_argument("--md", default="", help="also write the result to this file")
    return ap


def machine():
    """The machine and date, for the head line of a result."""
    return "%s, %d cores; %s" % (platform.processor() or platform.machine(), os.cpu_count(), datetime.date.today())


def emit(text, md, head=None):
    """Prints `head` (if any) and `text`; writes `text` to the file `md` when given."""
    print()
    if head:
        print(head)
    print(text)
    if md:
        open(md, "w").write(text + "\n")
