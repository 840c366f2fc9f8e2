#!/usr/bin/env bash
# Seeds: traces written by the default build's unit tests and by `import` of the real captures
# (plain and zstd), cut at a few places.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/cudatool
data=${CUDATOOL_CAPTURES:-$root/../shared/data}
[[ -d $data ]] || data=$root/../../shared/data
if [[ -x $bin && -r $data/trace_a.jsonl.xz ]]; then
  "$bin" import "$data/trace_a.jsonl.xz" -o "$out/import-a.jsonl" >/dev/null
  head -c 20000 "$out/import-a.jsonl" > "$out/import-a-head.jsonl"
  "$bin" import "$data/trace_b.jsonl.xz" -o "$out/import-b.jsonl.zst" >/dev/null
  head -c 3000 "$out/import-b.jsonl.zst" > "$out/import-b-cut.jsonl.zst"
  rm -f "$out/import-a.jsonl"
fi
exit 0
