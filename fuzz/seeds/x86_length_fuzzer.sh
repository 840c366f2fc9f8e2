#!/usr/bin/env bash
# Seeds: real machine code — 4 KiB slices of .text of the fixture libraries (built by the default
# build) and of one cached Debian driver build, at several offsets (instruction boundaries or not:
# the decoder must cope with both).
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
drivers=${CUDATOOL_DRIVERS:-$HOME/.cache/cudatool/drivers}
i=0
for f in "$root"/build/tests/fixtures/*.so* "$drivers"/libcuda.so.550.163.01; do
  [[ -f "$f" && ! -L "$f" ]] || continue
  tmp=$(mktemp)
  objcopy -O binary --only-section=.text "$f" "$tmp" 2>/dev/null || { rm -f "$tmp"; continue; }
  size=$(stat -c %s "$tmp")
  for off in 0 1 4096 123457 1000003 3000017; do
    [[ $off -lt $size ]] || continue
    tail -c +$((off + 1)) "$tmp" | head -c 4096 > "$out/text-$i-$off"
  done
  rm -f "$tmp"
  i=$((i + 1))
done
exit 0
