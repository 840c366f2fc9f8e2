#!/usr/bin/env bash
# Seeds: the tables fixture (every table present, 24 KB) and the other fixture libraries built by
# the default build; the real drivers are too large (28 MB) for -max_len.
set -euo pipefail
out=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$root"/build/tests/fixtures/*.so*; do
  [[ -f "$f" && ! -L "$f" ]] && cp "$f" "$out/fixture-$(basename "$f")"
done
exit 0
