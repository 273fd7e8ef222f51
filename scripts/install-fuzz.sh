#!/usr/bin/env bash
# Installs what the fuzz targets in fuzz/ need: a nightly toolchain (rustup) and cargo-fuzz
# (crates.io). Idempotent. Usage: scripts/install-fuzz.sh
set -euo pipefail
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
echo "nightly: $(rustc +nightly --version)"
echo "cargo-fuzz: $(cargo fuzz --version)"
