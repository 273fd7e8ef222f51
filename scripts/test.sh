#!/usr/bin/env bash
# Runs all of kplan's tests: installs the real toolchains they compile with (idempotent), then
# `cargo test` over the workspace. Tests that need a GPU skip themselves with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-test-deps.sh
# shellcheck source=scripts/test-env.sh
source scripts/test-env.sh
echo "toolchains: KPLAN_NVCC=${KPLAN_NVCC:-none} KPLAN_HIP_CLANG=${KPLAN_HIP_CLANG:-none} KPLAN_PYTHON=${KPLAN_PYTHON:-none}"
export KPLAN_REQUIRE_TOOLCHAINS=1
cargo test --workspace --locked --no-fail-fast "$@"
