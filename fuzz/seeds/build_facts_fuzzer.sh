#!/usr/bin/env bash
# Seeds: the fixture libraries built by the default build (exports, note, tables, cubins).
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$root"/build/tests/fixtures/*.so*; do
  [[ -f "$f" && ! -L "$f" ]] && cp "$f" "$out/fixture-$(basename "$f")"
done
exit 0
