#!/usr/bin/env bash
# Seeds: small slices of the real captures (tests/data/captures), plain and xz-compressed.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
if [[ -n $data ]]; then
  xz -dc "$data/trace_a.jsonl.xz" | head -n 120 | split -l 8 - "$out/capture-a-"
  xz -dc "$data/trace_b.jsonl.xz" | head -n 20 | xz -c > "$out/capture-b-head.jsonl.xz"
fi
exit 0
