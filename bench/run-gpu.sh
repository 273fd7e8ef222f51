#!/usr/bin/env bash
# Runs every reference kernel on the CUDA GPU of this machine: `kplan verify --backend cuda` for
# all kernels, `kplan bench all` (500 warm-up launches per configuration; each case also times a
# copy of its own bytes the same way), and the anchors (bench/anchors.py: PyTorch eager and kplan's
# Triton kernels, then kplan's defaults and the Triton kernels again in alternating rounds for the
# run-to-run spread) in the same run; merges everything into ONE JSON file.
#
#   bench/run-gpu.sh OUTDIR [KPLAN_BINARY]
#
# Writes OUTDIR/gpu-run.json (machine, GPU, driver, date, commands, every figure) and logs. Run
# from a copy without git metadata, KPLAN_COMMIT names the commit the copy was made from.
# Copy the JSON to bench/results/ and regenerate docs/bench.md (see docs/bench.md).
#
# The verify runs go in parallel (one process per kernel) before the bench, at every tiles.toml
# configuration, on kplan verify's edge-case shapes plus mid-size shapes whose row groups or
# vectors outnumber the persistent grids' blocks (the grid-stride loops run several times):
# KPLAN_VERIFY_ROWS / KPLAN_VERIFY_FLAT replace them; set either to "default" for verify's own
# list, whose full-size GPU cases (8192x4096, 512x32768, 2^27+3) take several minutes per kernel.
#
# KPLAN_VERIFY_TIMEOUT, KPLAN_BENCH_TIMEOUT, KPLAN_ANCHORS_TIMEOUT (seconds) bound the steps on a
# machine that limits a command's time; a step cut short keeps its exit status (124) in the JSON.
set -uo pipefail
out=${1:?usage: bench/run-gpu.sh OUTDIR [KPLAN_BINARY]}
bounded() { # SECONDS-or-empty COMMAND...
  local t=$1
  shift
  if [ -n "$t" ]; then timeout "$t" "$@"; else "$@"; fi
}
kplan=${2:-target/release/kplan}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
cd "$root"
py=${KPLAN_PYTHON:-python3}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$out/nvidia-smi.txt" 2>&1
rows_sizes=${KPLAN_VERIFY_ROWS:-1x1,3x31,2x32,5x33,4x63,3x64,2x65,7x1000,1000x32,33x4096,1x2^20+7,2048x1024,256x4096,32x32768}
flat_sizes=${KPLAN_VERIFY_FLAT:-1,31,32,33,63,64,65,1000,2^20+7,2^24+3}
sizes_of() { # kernel -> --sizes argument (none for verify's own list)
  local s=$flat_sizes
  case $1 in softmax|rmsnorm|quantize_fp8) s=$rows_sizes ;; esac
  [ "$s" = default ] || printf -- '--sizes=%s' "$s"
}
pids=()
for k in reduce_sum softmax rmsnorm add quantize_fp8; do
  bounded "${KPLAN_VERIFY_TIMEOUT:-}" "$kplan" verify "$k" --kernels kernels --backend cuda $(sizes_of "$k") --format json -o "$out/verify-$k.json" > "$out/verify-$k.log" 2>&1 &
  pids+=($!)
done
bounded "${KPLAN_VERIFY_TIMEOUT:-}" "$kplan" verify kernels/triton/softmax.py --backend cuda --format json -o "$out/verify-triton-softmax.json" > "$out/verify-triton-softmax.log" 2>&1 &
pids+=($!)
bounded "${KPLAN_VERIFY_TIMEOUT:-}" "$kplan" verify kernels/triton/rmsnorm.py --backend cuda --format json -o "$out/verify-triton-rmsnorm.json" > "$out/verify-triton-rmsnorm.log" 2>&1 &
pids+=($!)
verify_rc=0
for p in "${pids[@]}"; do wait "$p" || verify_rc=$?; done
verified=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# Warm-up launches before each configuration's timed runs (each follows a CPU-side check of its
# output, the GPU idle meanwhile): 500, a few milliseconds at least for every case, as the
# anchors' do_bench warms up for 25 ms. It did not remove the spread of repeated timings: the
# same configuration timed twice in one run still differed by up to 2.5% event-timed (4% with 5
# warm-up launches) while its CUDA-graph times agreed within 0.1%, i.e. the spread is in the
# per-launch cost, not in the kernel (bench/results/h200-2026-12-01b*.json).
warmup=${KPLAN_BENCH_WARMUP:-500}
bounded "${KPLAN_BENCH_TIMEOUT:-}" "$kplan" bench all --kernels kernels --alternatives --warmup "$warmup" --format json -o "$out/bench.json"; bench_rc=$?
bounded "${KPLAN_ANCHORS_TIMEOUT:-}" env PYTHONUNBUFFERED=1 "$py" bench/anchors.py "$out/bench.json" > "$out/anchors.json" 2> "$out/anchors.log"; anchors_rc=$?
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

"$py" - "$out" "$started" "$finished" "$verify_rc" "$bench_rc" "$anchors_rc" "$verified" "$rows_sizes" "$flat_sizes" <<'PY'
import json, os, platform, subprocess, sys
out, started, finished, vrc, brc, arc, verified, rows_sizes, flat_sizes = sys.argv[1:10]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        return {"error": f"{name}: {e}"}
verify = {}
for k in ["reduce_sum", "softmax", "rmsnorm", "add", "quantize_fp8", "triton-softmax", "triton-rmsnorm"]:
    v = load(f"verify-{k}.json")
    if "cases" in v:
        v = {"status": v["status"], "device": v["device"], "runs": v["runs"], "failures": v["failures"],
             "configs": v["configs"], "skip_reason": v.get("skip_reason"),
             "worst_rel_err": max((c["max_rel_err"] for c in v["cases"] if c["passed"]), default=None),
             "failed_cases": [c for c in v["cases"] if not c["passed"]][:20]}
    verify[k] = v
try:
    smi = open(os.path.join(out, "nvidia-smi.txt")).read().strip()
except Exception:
    smi = ""
# a copy without its own git metadata (the sources copied to the machine) names its commit in
# KPLAN_COMMIT, which wins over whatever checkout encloses the copy
commit = os.environ.get("KPLAN_COMMIT", "")
if not commit:
    try:
        r = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD^{commit}"], capture_output=True, text=True)
        commit = r.stdout.strip() if r.returncode == 0 else ""
    except Exception:
        commit = ""
commit = commit or "unknown (no git metadata on the machine)"
doc = {
    "machine": {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
                "kernel": platform.release(), "nvidia_smi": smi},
    "started": started, "finished": finished, "commit": commit,
    "verify_finished": verified,
    "verify_sizes": {"rows": rows_sizes, "flat": flat_sizes},
    "commands": ["bench/run-gpu.sh OUTDIR",
                 f"kplan verify <kernel> --backend cuda --sizes=<rows: {rows_sizes} | flat: {flat_sizes}> --format json (one process per kernel, in parallel)",
                 f"kplan bench all --alternatives --warmup {os.environ.get('KPLAN_BENCH_WARMUP', '500')} --format json", "python3 bench/anchors.py OUTDIR/bench.json"],
    "exit_codes": {"verify": int(vrc), "bench": int(brc), "anchors": int(arc)},
    "verify": verify,
    "bench": load("bench.json"),
    "anchors": load("anchors.json"),
}
with open(os.path.join(out, "gpu-run.json"), "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(json.dumps({"verify": {k: v.get("status") for k, v in verify.items()}, "exit_codes": doc["exit_codes"]}))
b = doc["bench"]
print("copy GB/s", b.get("copy_gbs"), "peak", b.get("peak_gbs"), b.get("kb_device"))
for r in b.get("records", []):
    if not r["default"]:
        continue
    print(f'{r["kernel"]:<12} {r["dtype"]} {r["shape"]:<11} {r["config"]:<22} {r["gbs"]:5.0f} GB/s '
          f'copy {100*r["frac_copy"]:5.1f}% graph {r["graph_gbs"]:5.0f} check {r["output_checked"]}')
for r in doc["anchors"].get("records", []):
    print(f'{r["impl"]:>7} {r["kernel"]:<12} {r["dtype"]} {r["shape"]:<11} {r.get("gbs", float("nan")):5.0f} GB/s '
          f'graph {r.get("graph_gbs", float("nan")):5.0f} {r.get("error", "")}')
PY
