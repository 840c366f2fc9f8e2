#!/usr/bin/env bash
# Seeds: the start of a trace imported from a real capture (plain, zstd, and a zstd file cut
# short), small enough for many executions per second.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
if [[ -n $bin && -n $data ]]; then
  tmp=$(mktemp -d)
  "$bin" import "$data/trace_a.jsonl.xz" -o "$tmp/a.jsonl" >/dev/null
  head -c 6000 "$tmp/a.jsonl" > "$out/import-a-head.jsonl"
  head -c 6000 "$tmp/a.jsonl" | zstd -q -c > "$out/import-a-head.jsonl.zst" 2>/dev/null || true
  "$bin" import "$data/trace_b.jsonl.xz" -o "$tmp/b.jsonl.zst" >/dev/null
  head -c 2000 "$tmp/b.jsonl.zst" > "$out/import-b-cut.jsonl.zst"
  rm -rf "$tmp"
fi
exit 0
