#!/usr/bin/env bash
# Seeds: the fixture cubins (CUDA 13, ABI 8) and a few small images of the real Debian driver
# builds (ABI 7), extracted with the cudatool of the default build when both are there.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$root"/tests/fixtures/cubins/prebuilt/*.cubin; do cp "$f" "$out/fixture-$(basename "$f")"; done
bin=$root/build/cudatool
drivers=${CUDATOOL_DRIVERS:-$HOME/.cache/cudatool/drivers}
if [[ -x "$bin" ]]; then
  for lib in "$drivers"/libcuda.so.470.* "$drivers"/libcuda.so.550.*; do
    [[ -f "$lib" ]] || continue
    tmp=$(mktemp -d)
    "$bin" cubins "$lib" --extract "$tmp" --summary >/dev/null 2>&1 || true
    # The ten smallest images: every structure, little time per execution.
    ls -S -r "$tmp"/*.cubin 2>/dev/null | head -10 | while read -r f; do
      cp "$f" "$out/real-$(basename "$lib")-$(basename "$f")"
    done
    rm -rf "$tmp"
  done
fi
exit 0
