#!/usr/bin/env bash
# Runs every libFuzzer target of a build for SECONDS each (default 10), seeded with
# fuzz/corpus/<target>/ plus seeds generated from the test fixtures and real driver builds,
# FUZZ_JOBS targets at a time (default: the number of CPUs). The build: FUZZ_BUILD, default
# build-fuzz (the fuzz preset; any build configured with CUDATOOL_FUZZ=ON and clang will do).
# Findings are written to <build>/findings/<target>/ and fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
jobs=${FUZZ_JOBS:-$(nproc)}
shopt -s nullglob
build=${FUZZ_BUILD:-build-fuzz}
targets=("$build"/fuzz/*_fuzzer)
[[ ${#targets[@]} -gt 0 ]] || {
  echo "fuzz: no targets built in $build (cmake --preset fuzz)" >&2; exit 2; }

# One target; its lines are printed together when it ends. Exit status 1: a finding.
run_one() {
  local t=$1 name work findings
  name=$(basename "$t")
  work=$build/corpus-run/$name
  findings=$build/findings/$name
  mkdir -p "$work" "$findings"
  [[ -d fuzz/corpus/$name ]] && cp -n fuzz/corpus/$name/* "$work/" 2>/dev/null || true
  if [[ -x fuzz/seeds/$name.sh ]]; then fuzz/seeds/$name.sh "$work" >/dev/null 2>&1 || true; fi
  local seeds
  seeds=$(ls "$work" | wc -l)
  if ! "$t" -max_total_time="$secs" -max_len=1048576 -rss_limit_mb=2048 -timeout=10 \
       -artifact_prefix="$findings/" -print_final_stats=1 "$work" >"$findings/log.txt" 2>&1; then
    { echo "fuzz: $name for ${secs}s ($seeds seeds) FAILED; see $findings/log.txt"
      tail -30 "$findings/log.txt"; } >&2
    return 1
  fi
  echo "fuzz: $name for ${secs}s ($seeds seeds)"
  grep -E 'stat::number_of_executed_units|cov:' "$findings/log.txt" | tail -2 | sed "s/^/fuzz: $name: /"
}

status=0
running=0
for t in "${targets[@]}"; do
  if (( running >= jobs )); then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while (( running > 0 )); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
