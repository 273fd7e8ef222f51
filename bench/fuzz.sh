#!/usr/bin/env bash
# Runs one fuzz target for SECONDS, seeded from the repository's fixtures, and keeps every
# crashing input as a regression fixture under tests/fixtures/fuzz/<target>/.
# Targets: scan_file (C/C++/CUDA lexer, structure pass, rules), python_lex (Triton side),
# spec_parse (kernel specs), config_parse (kplan.toml).
# Usage: bench/fuzz.sh TARGET SECONDS        (after scripts/install-fuzz.sh)
# Prints the date, commit, executions and duration at the end (what docs/fuzz.md records).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: bench/fuzz.sh TARGET SECONDS}
secs=${2:?usage: bench/fuzz.sh TARGET SECONDS}
corpus=$root/target/fuzz-corpus/$target
artifacts=$root/target/fuzz-artifacts/$target
keep=$root/tests/fixtures/fuzz/$target
mkdir -p "$corpus" "$artifacts"
case $target in
  scan_file) seeds=$(find "$root/crates/kplan-scan/tests/fixtures" "$root/kernels" -name '*.cu' -o -name '*.cuh' -o -name '*.h' | grep -v '/triton/') ;;
  python_lex) seeds=$(find "$root/crates/kplan-scan/tests" "$root/kernels" -name '*.py') ;;
  spec_parse) seeds=$(find "$root/examples" -name '*.toml') ;;
  config_parse) seeds=$(printf '%s\n' "$root/docs/scan.md") ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
for s in $seeds; do cp -n "$s" "$corpus/seed-$(basename "$s")" 2>/dev/null || true; done
if [ "$target" = config_parse ]; then
  # the documented example configuration, and the error cases of the tests
  printf 'targets = ["sm_90a", "gfx942"]\nselect = ["warp-size-literal"]\nignore = ["hardcoded-tile"]\nheader = "include/portable.h"\n[per-file-ignores]\n"third_party/**" = ["all"]\n' > "$corpus/seed-example.toml"
  printf '[scan]\ntargets = []\n' > "$corpus/seed-empty.toml"
  printf 'targets = ["gfx9420"]\ncolour = 1\n' > "$corpus/seed-bad.toml"
fi
start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git -C "$root" rev-parse --short HEAD)
log=$root/target/fuzz-$target.log
set +e
(cd "$root/fuzz" && cargo +nightly fuzz run "$target" "$corpus" -- \
  -max_total_time="$secs" -artifact_prefix="$artifacts/" -max_len=65536 -print_final_stats=1) > "$log" 2>&1
rc=$?
grep -E '^#[0-9]+.*(pulse|DONE)|^stat::|ERROR|panicked' "$log" || true
set -e
crashes=$(find "$artifacts" -type f -name 'crash-*' -o -type f -name 'timeout-*' -o -type f -name 'oom-*' | wc -l)
if [ "$crashes" -gt 0 ]; then
  mkdir -p "$keep"
  cp "$artifacts"/* "$keep"/
fi
execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
secs_run=$(grep -E '^stat::' "$log" >/dev/null && grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 || true)
echo "fuzz $target: started $start, commit $commit, requested ${secs}s, executions ${execs:-?} ($secs_run), crashing inputs kept: $crashes, libFuzzer exit $rc"
[ "$crashes" -eq 0 ]
