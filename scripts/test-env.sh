# Source this to point kplan (and its tests) at the toolchains scripts/install-test-deps.sh
# installed. Every variable is an override kplan also honours when set by a user.
_kplan_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_kplan_venv="$_kplan_root/.venv"
_kplan_nvcc=$(ls "$_kplan_venv"/lib/python3*/site-packages/nvidia/cu1*/bin/nvcc 2>/dev/null | head -n 1)
[ -n "$_kplan_nvcc" ] && export KPLAN_NVCC="${KPLAN_NVCC:-$_kplan_nvcc}"
[ -x /usr/bin/clang-19 ] && export KPLAN_HIP_CLANG="${KPLAN_HIP_CLANG:-/usr/bin/clang-19}"
[ -x "$_kplan_venv/bin/python" ] && export KPLAN_PYTHON="${KPLAN_PYTHON:-$_kplan_venv/bin/python}"
unset _kplan_root _kplan_venv _kplan_nvcc
