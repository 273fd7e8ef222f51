#!/usr/bin/env bash
# cpu-simt speed: `kplan verify` wall time (compile + run) of the 2^20-element block reduction at
# W = 64, and of kplan's four kernels (kernels/*.toml) at W = 32 and 64, pinned to CORES host
# cores (default 2: "0,1"). Prints one JSON object per run with the compile/run split that the
# report carries.  usage: bench/simt/run.sh [KPLAN_BINARY] [CORES]
set -euo pipefail
cd "$(dirname "$0")/../.."
KPLAN=${1:-target/debug/kplan}
CORES=${2:-0,1}
pin() { if command -v taskset >/dev/null; then taskset -c "$CORES" "$@"; else "$@"; fi; }
one() {
  local label=$1; shift
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$(KPLAN_SIMT_THREADS=$(echo "$CORES" | tr ',' '\n' | wc -l) pin "$KPLAN" verify "$@" --backend cpu-simt --format json)
  t1=$(date +%s.%N)
  python3 - "$label" "$t0" "$t1" <<PY
import json, sys
r = json.loads('''$out''')
print(json.dumps({"case": sys.argv[1], "wall_s": round(float(sys.argv[3]) - float(sys.argv[2]), 3),
                  "compile_s": round(r["compile_s"], 3), "run_s": round(r["run_s"], 3),
                  "status": r["status"], "runs": r["runs"], "failures": r["failures"]}))
PY
}
echo "{\"machine\": \"$(uname -m) $(nproc) cores, pinned to $CORES\", \"date\": \"$(date -u +%FT%TZ)\", \"commit\": \"$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\", \"cxx\": \"$(c++ --version | head -1)\"}"
one "block_sum 2^20, W=64" bench/simt/block_sum_2e20.toml --warp 64
for k in reduce_sum add softmax rmsnorm; do
  one "$k, W=32,64" "kernels/$k.toml" --warp 32,64
done
