#!/usr/bin/env bash
# Seeds: pairs of short traces imported from the real captures (A and B, A and a B with one
# changed byte, A and B cut short), joined by the fuzzer's separator line.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
if [[ -n $bin && -n $data ]]; then
  tmp=$(mktemp -d)
  "$bin" import "$data/trace_a.jsonl.xz" -o "$tmp/a.jsonl" --driver-version 580.159.04 >/dev/null
  "$bin" import "$data/trace_b.jsonl.xz" -o "$tmp/b.jsonl" --driver-version 580.159.04 >/dev/null
  sep=$'\n=====B=====\n'
  for n in 8 20 40; do
    { head -n "$n" "$tmp/a.jsonl"; printf '%s' "$sep"; head -n "$n" "$tmp/b.jsonl"; } > "$out/ab-head-$n"
  done
  { sed -n '1,30p' "$tmp/a.jsonl"; printf '%s' "$sep"; sed -n '1,30p' "$tmp/b.jsonl" | sed '20s/"post":"0/"post":"1/'; } > "$out/ab-changed"
  { sed -n '1,30p' "$tmp/a.jsonl"; printf '%s' "$sep"; sed -n '1,30p' "$tmp/b.jsonl" | sed "15d"; } > "$out/ab-dropped"
  { sed -n '150,200p' "$tmp/a.jsonl" | sed '1i'"$(head -n1 "$tmp/a.jsonl")"; printf '%s' "$sep"; head -c 3000 "$tmp/b.jsonl"; } > "$out/ab-cut"
  # A recording against the import (ab's capture view of B: the fuzzer sets it when bit 1 of the
  # input size is set; the padding makes it so): class-sized parameters, buffers behind pointers.
  f="$out/ab-capture-view"
  { sed -n '1,40p' "$tmp/a.jsonl"; printf '%s' "$sep"
    sed -n '1,40p' "$tmp/a.jsonl" | sed '1s/"mode":"import"/"mode":"ptrace"/' |
      sed '5,25s/"role":"params",/"role":"params","sized_by":"class",/' |
      sed '26,40s/"role":"params",/"role":"params.pList",/'; } > "$f"
  while (( ($(wc -c < "$f") & 2) == 0 )); do printf '\n' >> "$f"; done
  rm -rf "$tmp"
fi
exit 0
