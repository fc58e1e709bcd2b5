#!/usr/bin/env bash
# `tessera run --mode opt --tune` on example kernels at their // BENCH: size, 2 threads, with
# a fresh wisdom file: prints every candidate's time and the choice (docs/performance.md).
# Usage: bash bench/tune.sh [kernel ...]   (default: 2mm gemm syrk fdtd-2d jacobi-2d trmm covariance lu)
# TUNE_PRUNE=0 times every candidate (samples for `tessera calibrate --schedules`); THREADS=1 for one thread.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
export TESSERA_WISDOM=$(mktemp -d)/wisdom.json
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(2mm gemm syrk fdtd-2d jacobi-2d trmm covariance lu)
for k in "${kernels[@]}"; do
  f=examples/kernels/$k.c
  e=$(grep -m1 '^// ENTRY:' "$f" | sed 's#// ENTRY: *##')
  b=$(grep -m1 '^// BENCH:' "$f" | sed 's#// BENCH: *##')
  echo "== $k ($b)"
  # shellcheck disable=SC2086
  ./target/release/tessera run "$f" --entry "$e" --mode opt --tune --tune-prune "${TUNE_PRUNE:-5}" --threads "${THREADS:-2}" $b | grep "^tune"
done
