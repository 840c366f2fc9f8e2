#!/usr/bin/env bash
# Seeds: a trace with stacks recorded from the call-stack fixture (tests/fixtures/stacks) in
# preload mode, alone and followed by "#ELF" and the fixture library's own bytes (which every
# module path of the input then opens to).
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
fix=""
for d in "$root/build/tests/fixtures/stacks" "$root/build-asan/tests/fixtures/stacks"; do
  if [[ -x $d/stack_client ]]; then fix=$d; break; fi
done
if [[ -n $bin && -n $fix ]]; then
  tmp=$(mktemp -d)
  mkdir "$tmp/dev" && head -c 8192 /dev/zero > "$tmp/dev/nvidiactl"
  "$bin" trace -q --mode preload -o "$tmp/t.jsonl" --devices "$tmp/dev/*" -- \
    "$fix/stack_client" "$fix/stackfix/libstackfix.so" "$tmp/dev/nvidiactl" full >/dev/null || true
  if [[ -s $tmp/t.jsonl ]]; then
    head -c 60000 "$tmp/t.jsonl" > "$out/fixture-preload.jsonl"
    { head -c 20000 "$tmp/t.jsonl"; printf '\n#ELF\n'; cat "$fix/stackfix/libstackfix.so"; } \
      > "$out/fixture-preload-with-elf"
  fi
  rm -rf "$tmp"
fi
exit 0
