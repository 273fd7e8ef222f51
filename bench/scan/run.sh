#!/usr/bin/env bash
# Measures `kplan scan` throughput (MB/s and lines/s of C/C++/CUDA source, end to end, release
# build) on a real tree and, in the same run, ast-grep (ast-grep-cli from PyPI) with the
# equivalent five-rule set in bench/scan/ast-grep/. Then scans one generated 200 MB file made
# from the tree's own sources (robustness and single-file speed).
#
# Usage: bench/scan/run.sh TREE [RUNS]      e.g. bench/scan/run.sh /tmp/cutlass 3
# The tree is any checkout (CUTLASS, ggml, ...); nothing is downloaded except ast-grep-cli.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tree=${1:?usage: bench/scan/run.sh TREE [RUNS]}
runs=${2:-3}
cargo build --release -q -p kplan --manifest-path "$root/Cargo.toml" >&2
venv=${KPLAN_BENCH_VENV:-$root/target/bench-venv}
if [ ! -x "$venv/bin/ast-grep" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "ast-grep-cli==0.51.1" >&2
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)"
echo "kplan: $("$root/target/release/kplan" --version)  ast-grep: $("$venv/bin/ast-grep" --version)"
exec python3 "$root/bench/scan/measure.py" "$root" "$tree" "$runs" "$venv/bin/ast-grep"
