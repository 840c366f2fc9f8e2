#!/usr/bin/env bash
# Seeds: traces imported from the real captures (whole, the first 40 and 200 lines, cut in a
# line), each prefixed by the fuzzer's selector byte 't'; inject specs ('i') are in the corpus.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
if [[ -n $bin && -n $data ]]; then
  tmp=$(mktemp -d)
  "$bin" import "$data/trace_a.jsonl.xz" -o "$tmp/a.jsonl" --driver-version 580.159.04 >/dev/null
  { printf 't'; cat "$tmp/a.jsonl"; } > "$out/replay-trace-a"
  for n in 40 200; do { printf 't'; head -n "$n" "$tmp/a.jsonl"; } > "$out/replay-head-$n"; done
  { printf 't'; head -c 20000 "$tmp/a.jsonl"; } > "$out/replay-cut"
  rm -rf "$tmp"
fi
exit 0
