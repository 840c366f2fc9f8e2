#!/usr/bin/env bash
# Seeds: the fixture libraries of the default build (the cross-reference fixture with its PLT,
# .plt.got, pointer table and strings; the tables fixture; the symbolize fixture); the real
# drivers are too large for -max_len.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"
for f in "$root"/build/tests/fixtures/*.so* "$root"/build/tests/fixtures/*/stripped/*.so; do
  [[ -f "$f" && ! -L "$f" ]] && cp "$f" "$out/fixture-$(basename "$(dirname "$f")")-$(basename "$f")"
done
exit 0
