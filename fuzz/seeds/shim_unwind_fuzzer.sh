#!/usr/bin/env bash
# Seeds: fixture libraries as the shim sees them in memory (their files, where every section's
# address is its offset, cut at 1 MiB), each with the offset of its .eh_frame_hdr and a PC: seven
# spread over .text (inside functions), one past its end (outside every FDE)
# (see shim_unwind_fuzzer.cpp).
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"
i=0
for f in "$root"/build/tests/fixtures/stacks/stackfix/libstackfix.so \
         "$root"/build/tests/fixtures/*.so; do
  [[ -f "$f" && ! -L "$f" ]] || continue
  # [Nr] name type address offset size: the address of .eh_frame_hdr must equal its offset.
  read -r hdr hdr_off < <(readelf -S -W "$f" 2>/dev/null | sed 's/\[ */[/' |
    awk '$2==".eh_frame_hdr" {print $4, $5}') || continue
  read -r text text_size < <(readelf -S -W "$f" 2>/dev/null | sed 's/\[ */[/' |
    awk '$2==".text" {print $4, $6}') || continue
  [[ -n "$hdr" && -n "$hdr_off" && -n "$text" && $((16#$hdr)) -eq $((16#$hdr_off)) ]] || continue
  pcs=()
  for k in 1 2 3 4 5 6 7; do pcs+=($((16#$text + 16#$text_size * k / 8))); done
  for pc in "${pcs[@]}" $((16#$text + 16#$text_size + 64)); do
    { python3 -c "import sys,struct; sys.stdout.buffer.write(struct.pack('<II', $((16#$hdr)), $pc))"
      head -c 1048000 "$f"
    } > "$out/shim-unwind-$i-$pc"
  done
  i=$((i + 1))
done
exit 0
