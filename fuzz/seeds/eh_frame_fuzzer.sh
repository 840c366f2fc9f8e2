#!/usr/bin/env bash
# Seeds: the .eh_frame sections of the fixture libraries and of one real driver build, each
# prefixed with the fuzzer's flags byte and the section address (see eh_frame_fuzzer.cpp).
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
drivers=${CUDATOOL_DRIVERS:-$HOME/.cache/cudatool/drivers}
i=0
for f in "$root"/build/tests/fixtures/*.so* "$root"/build/tests/fixtures/symbolize/stripped/*.so \
         "$drivers"/libcuda.so.550.163.01; do
  [[ -f "$f" && ! -L "$f" ]] || continue
  addr=$( (readelf -S -W "$f" 2>/dev/null || true) | sed 's/\[ */[/' | awk '$2==".eh_frame" {print $4}')
  [[ -n "$addr" ]] || continue
  tmp=$(mktemp)
  objcopy -O binary --only-section=.eh_frame "$f" "$tmp" 2>/dev/null || { rm -f "$tmp"; continue; }
  for flags in 00 03; do
    { printf "\\x$flags"; python3 -c "import sys,struct; sys.stdout.buffer.write(struct.pack('<Q', int('$addr', 16)))"
      if [[ $(stat -c %s "$tmp") -gt 65536 ]]; then head -c 65536 "$tmp"; else cat "$tmp"; fi
    } > "$out/ehframe-$i-$flags"
  done
  rm -f "$tmp"
  i=$((i + 1))
done
exit 0
