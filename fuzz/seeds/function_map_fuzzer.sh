#!/usr/bin/env bash
# Seeds: the fixture libraries built by the default build (small; .eh_frame, .eh_frame_hdr,
# exports, build id), including the stripped library of the symbolize end-to-end test.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$root"/build/tests/fixtures/*.so* "$root"/build/tests/fixtures/symbolize/*/*.so; do
  [[ -f "$f" && ! -L "$f" ]] && cp "$f" "$out/fixture-$(basename "$(dirname "$f")")-$(basename "$f")"
done
exit 0
