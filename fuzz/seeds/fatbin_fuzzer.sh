#!/usr/bin/env bash
# Seeds: the fixture fatbins (stored, zstd, LZ4), one cubin, and the fixture libraries that
# embed them (built by the default build) for the scan through DriverImage.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$root"/tests/fixtures/cubins/prebuilt/*.fatbin "$root"/tests/fixtures/cubins/prebuilt/kernels_sm75.cubin \
         "$root"/build/tests/fixtures/libcuda_cubins*.so; do
  [[ -f "$f" ]] || continue
  cp "$f" "$out/fixture-$(basename "$f")"
done
exit 0
