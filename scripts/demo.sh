#!/usr/bin/env bash
# The main job on built-in examples: set up, build, then run a few example kernels through
# Tessera (check, run with timing and checksums), and compare one with gcc.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
T=target/release/tessera
hdr() { sed -n "s|^// $2: ||p" "examples/kernels/$1.c" | head -1; }
for k in gemm jacobi-2d floyd-warshall mandelbrot sumeuler; do
  f="examples/kernels/$k.c"
  [ -f "$f" ] || continue
  entry=$(hdr "$k" ENTRY); args=$(hdr "$k" RUN)
  echo "== $k: tessera run $f --entry $entry $args"
  # shellcheck disable=SC2086
  $T run "$f" --entry "$entry" $args --mode interp
  echo "-- the same through the LLVM JIT (guards on):"
  # shellcheck disable=SC2086
  $T run "$f" --entry "$entry" $args --mode jit
done
# A parallel skeleton with adaptive granularity: Mandelbrot rows, retuned so that tasks last
# 10-100 ms, on every core.
echo "== skel: mandel_row over 0..1200 rows, parMapChunk, adaptive from tau=1"
$T skel examples/kernels/mandelbrot.c --entry mandel_row --skeleton chunk --over 0..1200 \
  -D w=1800 -D h=1200 -D maxit=1000 --tau 1 --adaptive --target-ms 10..100 --mode jit
# One kernel side by side with gcc -O0 on the same inputs (bit-exact oracle).
k=gemm; f=examples/kernels/$k.c; entry=$(hdr $k ENTRY); args=$(hdr $k TEST)
tmp=$(mktemp -d)
# shellcheck disable=SC2086
$T run "$f" --entry "$entry" $args --save-inputs "$tmp/in" --out "$tmp/tessera" >/dev/null
$T emit "$f" --entry "$entry" --target driver > "$tmp/driver.c"
gcc -O0 -ffp-contract=off -fwrapv -std=gnu99 -w -include tests/gcc-prelude.h "$tmp/driver.c" -o "$tmp/driver" -lm
mkdir -p "$tmp/gcc"
# shellcheck disable=SC2046
"$tmp/driver" "$tmp/in" "$tmp/gcc" $(echo "$args" | sed "s/-D //g") >/dev/null
if diff -r "$tmp/tessera" "$tmp/gcc" >/dev/null; then
  echo "== $k ($args): interpreter output is bit-identical to gcc -O0"
else
  echo "== $k: MISMATCH against gcc" >&2; exit 1
fi
rm -rf "$tmp"
# Compiled data operators: SQL over a CSV file, one fused JIT pipeline per query, with user
# functions written in the kernel language (inlined into the pipeline).
Q=examples/queries
echo "== query: revenue per region of big sales, user functions inlined (plan and generated code: --explain)"
$T query "SELECT region, count(*) AS n, sum(revenue(qty, price, discount)) AS revenue, max(price) FROM s WHERE big(qty, store) GROUP BY region ORDER BY revenue DESC" \
  --table s=$Q/sales.csv --functions $Q/functions.c
echo "== query: top 5 sales by revenue"
$T query "SELECT id, region, revenue(qty, price, discount) AS r FROM s ORDER BY r DESC LIMIT 5" \
  --table s=$Q/sales.csv --functions $Q/functions.c
echo "== query: a user function that divides by zero on some row (a located error, exit 1)"
if $T query "SELECT sum(per_unit_above(price, qty, 20)) FROM s" --table s=$Q/sales.csv --functions $Q/functions.c; then
  echo "expected a run-time error" >&2; exit 1
fi
