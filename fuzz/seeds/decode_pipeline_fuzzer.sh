#!/usr/bin/env bash
# Seeds: slices of a real capture imported as a trace (header + 40 events each), and a slice
# with durations, pids and failed calls as a ptrace recording has them.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
if [[ -n $bin && -n $data ]]; then
  tmp=$(mktemp -d)
  "$bin" import "$data/trace_a.jsonl.xz" -o "$tmp/a.jsonl" --driver-version 580.159.04 >/dev/null
  head -n 1 "$tmp/a.jsonl" > "$tmp/h"
  tail -n +2 "$tmp/a.jsonl" | split -l 40 - "$tmp/part-"
  for p in "$tmp"/part-*; do cat "$tmp/h" "$p" > "$out/decode-$(basename "$p")"; done
  sed -n '100,160p' "$tmp/a.jsonl" | sed -E 's/"pid":0,/"dur":1500,"pid":42,/; s/"ret":0,/"ret":-1,"errno":25,/' \
    | cat "$tmp/h" - > "$out/decode-durations"
  rm -rf "$tmp"
fi
exit 0
