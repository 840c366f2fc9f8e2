#!/usr/bin/env bash
# Runs every libFuzzer target in build-fuzz/fuzz for SECONDS each (default 10), seeded with
# fuzz/corpus/<target>/ plus seeds generated from the test fixtures and real driver builds.
# Findings are written to build-fuzz/findings/<target>/ and fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
shopt -s nullglob
status=0
targets=(build-fuzz/fuzz/*_fuzzer)
[[ ${#targets[@]} -gt 0 ]] || { echo "fuzz: no targets built (cmake --preset fuzz)" >&2; exit 2; }
for t in "${targets[@]}"; do
  name=$(basename "$t")
  work=build-fuzz/corpus-run/$name
  findings=build-fuzz/findings/$name
  mkdir -p "$work" "$findings"
  [[ -d fuzz/corpus/$name ]] && cp -n fuzz/corpus/$name/* "$work/" 2>/dev/null || true
  if [[ -x fuzz/seeds/$name.sh ]]; then fuzz/seeds/$name.sh "$work" || true; fi
  echo "fuzz: $name for ${secs}s ($(ls "$work" | wc -l) seeds)"
  if ! "$t" -max_total_time="$secs" -max_len=1048576 -rss_limit_mb=2048 -timeout=10 \
       -artifact_prefix="$findings/" -print_final_stats=1 "$work" >"$findings/log.txt" 2>&1; then
    echo "fuzz: $name FAILED; see $findings/log.txt" >&2
    tail -30 "$findings/log.txt" >&2
    status=1
  else
    grep -E 'stat::number_of_executed_units|cov:' "$findings/log.txt" | tail -2 | sed "s/^/fuzz: $name: /"
  fi
done
exit $status
