#!/usr/bin/env bash
# Seeds: slices of the real captures of ../shared/data (decompressed), and one still xz-compressed.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${CUDATOOL_CAPTURES:-$root/../shared/data}
[[ -d $data ]] || data=$root/../../shared/data
if [[ -r $data/trace_a.jsonl.xz ]]; then
  xz -dc "$data/trace_a.jsonl.xz" | split -l 40 - "$out/capture-a-"
  cp "$data/trace_b.jsonl.xz" "$out/capture-b.jsonl.xz"
fi
exit 0
