#!/usr/bin/env bash
# Wall time of `kplan scan` on one tree with two kplan binaries, alternating runs (so both see
# the same machine load), median of RUNS each. Used to check the cost of a change to the scan
# (e.g. the project index pass) against the build before it.
#
# Usage: bench/scan/compare.sh KPLAN_BEFORE KPLAN_AFTER TREE [RUNS]
set -euo pipefail
a=${1:?usage: compare.sh KPLAN_BEFORE KPLAN_AFTER TREE [RUNS]}
b=${2:?}
tree=${3:?}
runs=${4:-5}
targets=gfx942,gfx90a,gfx1100,sm_90a,sm_80
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u '+%Y-%m-%d %H:%M UTC')"
python3 - "$a" "$b" "$tree" "$runs" "$targets" <<'PY'
import json, statistics, subprocess, sys, time
a, b, tree, runs, targets = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
times = {a: [], b: []}
found = {}
for _ in range(runs):
    for exe in (a, b):
        t = time.perf_counter()
        out = subprocess.run([exe, "scan", tree, "--targets", targets, "--format", "json",
                              "--fail-on", "never"], capture_output=True, text=True, check=True)
        times[exe].append(time.perf_counter() - t)
        d = json.loads(out.stdout)
        found[exe] = (d.get("files_scanned"), d.get("lines_scanned"), len(d.get("findings", [])))
ma, mb = statistics.median(times[a]), statistics.median(times[b])
for exe, m in ((a, ma), (b, mb)):
    f, l, n = found[exe]
    print(f"{exe}: median {m:.3f} s over {runs} runs (min {min(times[exe]):.3f}); {f} files, {l} lines, {n} findings")
print(f"after/before: {mb / ma:.2f}x")
PY
