#!/usr/bin/env bash
# Profiles one launch of each reference kernel that missed its bandwidth goal with Nsight Compute
# (ncu) on an NVIDIA GPU, for the "what limits it" part of docs/verify.md.
#   bench/profile-gpu.sh [KPLAN_BINARY] [OUTDIR]
# The timings kplan prints under ncu are not meaningful (ncu replays each kernel); read the
# sections (Speed Of Light, Memory Workload, Warp State, Launch Statistics, Occupancy).
set -u
B=${1:-target/release/kplan}
OUT=${2:-bench/results/ncu}
mkdir -p "$OUT"
export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | head -1)
for c in "softmax 8192x1024 bf16" "softmax 8192x32768 bf16" "rmsnorm 8192x4096 bf16" "add 1073741824 bf16"; do
  set -- $c
  f=$OUT/ncu-$1-$2.txt
  timeout 60 ncu --clock-control none --kernel-name regex:kplan_ --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis "$B" bench "$1" --sizes "$2" --dtype "$3" --reps 2 --warmup 3 > "$f" 2>&1
  echo "$c rc=$?"
done
