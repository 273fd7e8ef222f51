#!/usr/bin/env bash
# Profiles one launch of each reference kernel that missed its bandwidth goal with Nsight Compute
# (ncu) on an NVIDIA GPU, for the "what limits it" part of docs/verify.md. KPLAN_PROFILE_CASES
# (space-separated KERNEL:SHAPE, bf16) replaces the default list.
#   bench/profile-gpu.sh [KPLAN_BINARY] [OUTDIR]
# The timings kplan prints under ncu are not meaningful (ncu replays each kernel); read the
# sections (Speed Of Light, Memory Workload, Warp State, Launch Statistics, Occupancy).
set -u
B=${1:-target/release/kplan}
OUT=${2:-bench/results/ncu}
mkdir -p "$OUT"
export PATH=$PATH:$(ls -d /opt/nvidia/nsight-compute/*/ 2>/dev/null | head -1)
cases=${KPLAN_PROFILE_CASES:-"softmax:8192x1024 softmax:8192x4096 softmax:2048x8192 rmsnorm:8192x4096 rmsnorm:32768x1024 quantize_fp8:8192x7168"}
for c in $cases; do
  c="${c%%:*} ${c#*:} bf16"
  set -- $c
  f=$OUT/ncu-$1-$2.txt
  timeout 60 ncu --clock-control none --kernel-name regex:kplan_ --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis "$B" bench "$1" --kernels kernels --sizes "$2" --dtype "$3" --reps 2 --warmup 3 > "$f" 2>&1
  echo "$c rc=$?"
done
