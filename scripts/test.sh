#!/usr/bin/env bash
# Runs all of kplan's checks: `cargo fmt --check` and `cargo clippy -D warnings` over the
# workspace, then installs the real toolchains the tests compile with (idempotent) and runs
# `cargo test` over the workspace (it includes `cargo xtask generate --check`, crates/xtask).
# Tests that need a GPU skip themselves with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Disk is the resource CI machines run short of: say how much there is before building, and
# do not keep incremental-compilation state (about 0.8 GB) in CI, where it is never reused.
df -h "$root" | tail -1 | awk '{print "disk: " $4 " free on " $6}'
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
bash scripts/install-test-deps.sh
# shellcheck source=scripts/test-env.sh
source scripts/test-env.sh
echo "toolchains: KPLAN_NVCC=${KPLAN_NVCC:-none} KPLAN_HIP_CLANG=${KPLAN_HIP_CLANG:-none} KPLAN_PYTHON=${KPLAN_PYTHON:-none}"
export KPLAN_REQUIRE_TOOLCHAINS=1
cargo test --workspace --locked --no-fail-fast "$@"
