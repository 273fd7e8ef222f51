#!/usr/bin/env bash
# Runs every reference kernel on the CUDA GPU of this machine: `kplan verify --backend cuda` for
# all kernels, `kplan bench all`, and the anchors (bench/anchors.py: PyTorch eager and kplan's
# Triton kernels) in the same run; merges everything into ONE JSON file.
#
#   bench/run-gpu.sh OUTDIR [KPLAN_BINARY]
#
# Writes OUTDIR/gpu-run.json (machine, GPU, driver, date, commands, every figure) and logs. Run
# from a copy without git metadata, KPLAN_COMMIT names the commit the copy was made from.
# Copy the JSON to bench/results/ and regenerate docs/bench.md (see docs/bench.md).
set -uo pipefail
out=${1:?usage: bench/run-gpu.sh OUTDIR [KPLAN_BINARY]}
kplan=${2:-target/release/kplan}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
cd "$root"
py=${KPLAN_PYTHON:-python3}

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$out/nvidia-smi.txt" 2>&1
verify_rc=0
for k in reduce_sum softmax rmsnorm add quantize_fp8; do
  "$kplan" verify "$k" --kernels kernels --backend cuda --format json -o "$out/verify-$k.json" || verify_rc=$?
done
"$kplan" verify kernels/triton/softmax.py --backend cuda --format json -o "$out/verify-triton-softmax.json" || verify_rc=$?
"$kplan" verify kernels/triton/rmsnorm.py --backend cuda --format json -o "$out/verify-triton-rmsnorm.json" || verify_rc=$?
"$kplan" bench all --kernels kernels --alternatives --format json -o "$out/bench.json"; bench_rc=$?
PYTHONUNBUFFERED=1 "$py" bench/anchors.py "$out/bench.json" > "$out/anchors.json" 2> "$out/anchors.log"; anchors_rc=$?
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

"$py" - "$out" "$started" "$finished" "$verify_rc" "$bench_rc" "$anchors_rc" <<'PY'
import json, os, platform, subprocess, sys
out, started, finished, vrc, brc, arc = sys.argv[1:7]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        return {"error": f"{name}: {e}"}
verify = {}
for k in ["reduce_sum", "softmax", "rmsnorm", "add", "quantize_fp8", "triton-softmax", "triton-rmsnorm"]:
    v = load(f"verify-{k}.json")
    if "cases" in v and k.startswith("triton"):
        v = {"status": "skipped" if v.get("skipped") else ("passed" if all(c.get("ok") for c in v["cases"]) else "failed"),
             "cases": len(v["cases"]), "failed": sum(1 for c in v["cases"] if not c.get("ok")), "skipped": v.get("skipped")}
    elif "cases" in v:
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
    "commands": ["bench/run-gpu.sh OUTDIR", "kplan verify <kernel> --backend cuda --format json",
                 "kplan bench all --alternatives --format json", "python3 bench/anchors.py OUTDIR/bench.json"],
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
