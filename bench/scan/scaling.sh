#!/usr/bin/env bash
# Scan time against input size (one huge function, one huge line, a big tree), release build.
# Usage: bench/scan/scaling.sh [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-3}
cargo build --release -q -p kplan --manifest-path "$root/Cargo.toml" >&2
target=${CARGO_TARGET_DIR:-$root/target}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+dirty')  kplan: $("$target/release/kplan" --version)"
exec python3 "$root/bench/scan/scaling.py" "$target/release/kplan" "$runs"
