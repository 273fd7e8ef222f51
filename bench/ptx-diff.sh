#!/usr/bin/env bash
# Compares the device code nvcc makes of two trees of the reference kernels, configuration by
# configuration: a change meant to leave the device code alone (a helper moved into
# kernels/kplan_kernels.h, say) must give the same PTX, or, where the PTX differs (inlining
# order, a static's mangled name), SASS with as many instructions and the same count of every
# memory, arithmetic, conversion, shuffle and barrier instruction (register names and the
# integer index arithmetic may differ; no local-memory access may appear).
#
#   bench/ptx-diff.sh OLD_KERNELS_DIR [NEW_KERNELS_DIR]     (default NEW: kernels/)
#
# Each tree needs its kplan_kernels.h beside the .cu files; include/ (the portability header)
# is this checkout's. The matrix: the row kernels (softmax, rmsnorm, quantize_fp8) x fp32/bf16 x
# KPLAN_ITEMS 0/4/8/16 x KPLAN_UNROLL 1/2 x KPLAN_TPR 32/256, the flat kernels (add,
# reduce_sum) x fp32/bf16 x KPLAN_UNROLL 1/4 x KPLAN_VEC 1/0 (0: 16 bytes), each for sm_80 and
# sm_90a. Prints one line per configuration whose PTX differs (with the SASS verdict) and a
# count; exit 1 if any SASS differs as above. PTX_DIFF_ARCHS replaces the architectures,
# PTX_DIFF_JOBS (default 2) sets how many configurations compile at once. NVCC (default:
# $KPLAN_NVCC, else nvcc) names the compiler, CUOBJDUMP (default: cuobjdump on PATH, else the one
# in Triton's package) the disassembler.
set -uo pipefail
old=${1:?usage: bench/ptx-diff.sh OLD_KERNELS_DIR [NEW_KERNELS_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
new=${2:-$root/kernels}
nvcc=${NVCC:-${KPLAN_NVCC:-nvcc}}
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || ls "$root"/.venv/lib/python3*/site-packages/triton/backends/nvidia/bin/cuobjdump 2>/dev/null | head -n 1)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jobs=()
for arch in ${PTX_DIFF_ARCHS:-sm_80 sm_90a}; do
  for bf in 0 1; do
    for k in softmax rmsnorm quantize_fp8; do
      for items in 0 4 8 16; do
        for unroll in 1 2; do
          for tpr in 32 256; do
            block=$((tpr < 64 ? 64 : tpr))
            vec=$((bf ? 8 : 4))
            jobs+=("$arch $k -DKPLAN_DTYPE_BF16=$bf -DKPLAN_BLOCK=$block -DKPLAN_VEC=$vec -DKPLAN_TPR=$tpr -DKPLAN_ITEMS=$items -DKPLAN_UNROLL=$unroll")
          done
        done
      done
    done
    for k in add reduce_sum; do
      for unroll in 1 4; do
        for vec in 1 0; do
          v=$vec
          [ "$vec" = 0 ] && v=$((bf ? 8 : 4))
          jobs+=("$arch $k -DKPLAN_DTYPE_BF16=$bf -DKPLAN_BLOCK=256 -DKPLAN_VEC=$v -DKPLAN_UNROLL=$unroll")
        done
      done
    done
  done
done
# SASS opcodes, one a line (predicates dropped), and the histogram that must match
sass_ops() { "$cuobjdump" -sass "$1" 2>/dev/null | grep -E '^\s+/\*[0-9a-f]{4}\*/' |
  sed -E 's/^\s*\/\*[0-9a-f]+\*\/\s*//; s/;.*//' | awk '{ if ($1 ~ /^@/) print $2; else print $1 }'; }
# (HFMA2.MMA with zero operands is ptxas's idiom for a register move, not arithmetic)
kept_ops() { grep -E '^(LDG|STG|LDS|STS|LDL|STL|F|MUFU|BAR|SHFL|HADD|HMUL|HFMA)' "$1" | grep -v '^HFMA2.MMA$' | sort | uniq -c; }
one() { # index arch kernel defines...
  local i=$1 arch=$2 k=$3
  shift 3
  local gen="-gencode=arch=compute_${arch#sm_},code=$arch"
  for side in old new; do
    local dir=$old
    [ $side = new ] && dir=$new
    "$nvcc" -ptx $gen --std=c++17 -I"$dir" -I"$root/include" "$@" -o "$work/$i.$side.ptx" "$dir/$k.cu" 2> "$work/$i.$side.err" ||
      { echo "compile failed ($side): $arch $k $* :: $(head -c 300 "$work/$i.$side.err")"; return; }
  done
  cmp -s "$work/$i.old.ptx" "$work/$i.new.ptx" && return
  if [ -z "$cuobjdump" ]; then
    echo "SASS differs (PTX differs; no cuobjdump to compare SASS): $arch $k $*"
    return
  fi
  for side in old new; do
    local dir=$old
    [ $side = new ] && dir=$new
    "$nvcc" -cubin $gen --std=c++17 -I"$dir" -I"$root/include" "$@" -o "$work/$i.$side.cubin" "$dir/$k.cu" 2>/dev/null
    sass_ops "$work/$i.$side.cubin" > "$work/$i.$side.ops"
  done
  local a b
  a=$(wc -l < "$work/$i.old.ops")
  b=$(wc -l < "$work/$i.new.ops")
  if [ "$a" -gt 0 ] && ! grep -qE '^(LDL|STL)' "$work/$i.new.ops" && cmp -s <(kept_ops "$work/$i.old.ops") <(kept_ops "$work/$i.new.ops"); then
    echo "PTX differs, SASS same ($a -> $b instructions, same memory/arithmetic/barrier counts): $arch $k $*"
  else
    echo "SASS differs ($a -> $b instructions): $arch $k $*"
  fi
}
export -f one sass_ops kept_ops
export old new root nvcc work cuobjdump
printf '%s\n' "${jobs[@]}" | nl -nln -w1 -s' ' | xargs -P "${PTX_DIFF_JOBS:-2}" -L1 bash -c 'one "$@"' _ > "$work/report.txt"
sort "$work/report.txt"
n=$(grep -c . "$work/report.txt")
bad=$(grep -c -e '^SASS differs' -e '^compile failed' "$work/report.txt")
echo "${#jobs[@]} configurations: $((${#jobs[@]} - n)) same PTX, $((n - bad)) same SASS counts, $bad differ or failed"
[ "$bad" = 0 ]
