#!/usr/bin/env bash
# Exploration run on a CUDA GPU: times every [[bench.rows]] configuration of a tiles file for the
# row kernels (softmax, rmsnorm, quantize_fp8) on their goal shapes, checks quantize_fp8 and the
# persistent / rows-in-flight configurations with `kplan verify --backend cuda`, and prints the
# fastest configuration per shape. What it finds goes into kernels/tiles.toml's defaults; the
# figures that docs quote come from bench/run-gpu.sh only.
#
#   bench/sweep-gpu.sh OUTDIR [KPLAN_BINARY] [KERNELS_DIR]
set -uo pipefail
out=${1:?usage: bench/sweep-gpu.sh OUTDIR [KPLAN_BINARY] [KERNELS_DIR]}
kplan=${2:-target/release/kplan}
kdir=${3:-kernels}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
for k in quantize_fp8 softmax rmsnorm; do
  timeout 200 "$kplan" verify "$k" --kernels "$kdir" --backend cuda --format json -o "$out/verify-$k.json"
  echo "verify $k rc=$?"
done
for k in softmax rmsnorm quantize_fp8; do
  timeout 240 "$kplan" bench "$k" --kernels "$kdir" --alternatives --reps 30 --format json -o "$out/bench-$k.json"
  echo "bench $k rc=$?"
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
for k in ["quantize_fp8", "softmax", "rmsnorm"]:
    try:
        v = json.load(open(os.path.join(out, f"verify-{k}.json")))
        bad = [c for c in v["cases"] if not c["passed"]][:5]
        print("verify", k, v["status"], v["runs"], "runs", v["failures"], "failures", bad)
    except Exception as e:
        print("verify", k, "unreadable:", e)
for k in ["softmax", "rmsnorm", "quantize_fp8"]:
    try:
        b = json.load(open(os.path.join(out, f"bench-{k}.json")))
    except Exception as e:
        print("bench", k, "unreadable:", e)
        continue
    print("copy", b["copy_gbs"])
    by = {}
    for r in b["records"]:
        by.setdefault((r["dtype"], r["shape"]), []).append(r)
    for key, rs in by.items():
        rs.sort(key=lambda r: -r["gbs"])
        d = [r for r in rs if r["default"]][0]
        print(k, *key, "default", d["config"], f'{d["gbs"]:.0f}', "| best:",
              "; ".join(f'{r["config"]} {r["gbs"]:.0f} g{r["graph_gbs"]:.0f}{"" if r["output_checked"] else " BAD"}' for r in rs[:6]))
PY
