#!/usr/bin/env bash
# kplan's four kernels through the harness path on a CUDA GPU (`kplan verify kernels/K.toml
# --backend cuda`), then the cpu-simt speed bench pinned to two host cores (bench/simt/run.sh).
#
#   bench/verify-harness-gpu.sh OUTDIR [KPLAN_BINARY]
#
# Writes OUTDIR/verify-cuda-K.json per kernel, OUTDIR/simt-bench.jsonl and OUTDIR/summary.txt.
set -uo pipefail
out=${1:?usage: bench/verify-harness-gpu.sh OUTDIR [KPLAN_BINARY]}
kplan=${2:-target/debug/kplan}
cd "$(dirname "$0")/.."
mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep 'Model name'; c++ --version | head -1; } > "$out/machine.txt" 2>&1
for k in add reduce_sum softmax rmsnorm; do
  timeout 90 "$kplan" verify "kernels/$k.toml" --backend cuda --format json -o "$out/verify-cuda-$k.json"
  echo "harness $k cuda rc=$?" | tee -a "$out/summary.txt"
done
timeout 150 bash bench/simt/run.sh "$kplan" 0,1 > "$out/simt-bench.jsonl"
echo "simt bench rc=$?" | tee -a "$out/summary.txt"
