#!/usr/bin/env bash
# Installs the system packages Tessera needs (Debian 12), if any is missing.
# Used by `make demo` and by CI (.ci/run). Safe to run repeatedly.
set -euo pipefail
# build-essential, pkg-config: gcc (the second oracle, and the C the emitters produce).
# llvm-19-dev (+ libpolly-19-dev, which llvm-config's cmake files reference; zlib1g-dev,
# libzstd-dev, libxml2-dev for its link line): the JIT, linked dynamically to libLLVM-19.
# autoconf automake libtool libgmp-dev: isl, built from source by the isl-rs crate.
# python3-venv: the Python environment of the query tests' oracle (DuckDB), below.
PKGS=(build-essential pkg-config llvm-19-dev libpolly-19-dev zlib1g-dev libzstd-dev libxml2-dev
  autoconf automake libtool libgmp-dev python3-venv)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
command -v cargo >/dev/null || { echo "setup: cargo (Rust) is required: https://rustup.rs" >&2; exit 1; }
# DuckDB, the oracle of the query engine's differential test (crates/query/tests/duckdb.rs),
# in a virtual environment of its own under target/ (from PyPI).
cd "$(dirname "$0")/.."
if ! target/pyenv/bin/python -c "import duckdb" 2>/dev/null; then
  echo "setup: installing DuckDB into target/pyenv"
  python3 -m venv target/pyenv
  target/pyenv/bin/pip install -q duckdb==2.0.1
fi
