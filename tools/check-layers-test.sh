#!/bin/sh
# The layer check (tools/check-layers.sh) fails on what it must catch. It copies src/ into a
# temporary tree, checks that the copy is clean, then plants one violation at a time in the copy
# and checks the exit status and the line that names it:
#   an upward include in a C++ header (rm/ including trace/, the circle the move of event
#   decoding to trace/ broke), an upward include of a shim C file by a relative path, a circle of
#   includes between two files of one layer, a folder of src/ in no layer, and bad usage.
# Run by ctest as `layers.planted`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
check="$here/check-layers.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$here/../src" "$tmp/src"
fails=0

# expect RC PATTERN: the check of the copy exits RC and prints a line matching PATTERN (grep -E).
expect() {
  rc=0
  out=$(sh "$check" "$tmp/src" 2>&1) || rc=$?
  if [ "$rc" -ne "$1" ] || ! printf '%s\n' "$out" | grep -Eq "$2"; then
    echo "FAIL ($what): want exit $1 and a line matching '$2'; got exit $rc:" >&2
    printf '%s\n' "$out" >&2
    fails=$((fails + 1))
  else
    echo "ok ($what): $(printf '%s\n' "$out" | grep -E "$2" | head -n 1)"
  fi
}
# plant FILE TEXT: appends a line to FILE of the copy (restored by restore).
plant() {
  cp "$tmp/src/$1" "$tmp/saved"
  printf '%s\n' "$2" >>"$tmp/src/$1"
  line=$(wc -l <"$tmp/src/$1" | tr -d ' ')
}
restore() { cp "$tmp/saved" "$tmp/src/$1"; }

what="the tree as it is"
expect 0 ': clean$'

what="rm/ includes trace/"
plant rm/tables.hpp '#include "trace/event.hpp"'
expect 1 "^check-layers: src/rm/tables.hpp:$line: rm includes trace/event.hpp"
restore rm/tables.hpp

what="a shim C file includes a layer below by a relative path"
plant record/preload/hooks.c '#include "../../replay/session.hpp"'
expect 1 "^check-layers: src/record/preload/hooks.c:$line: record includes replay/session.hpp"
restore record/preload/hooks.c

what="base/ includes cli/ with angle brackets"
plant base/bytes.hpp '#include <cli/common.hpp>'
expect 1 "^check-layers: src/base/bytes.hpp:$line: base includes cli/common.hpp"
restore base/bytes.hpp

what="a circle of includes"
printf '#include "base/planted_b.h"\n' >"$tmp/src/base/planted_a.h"
printf '#include "planted_a.h"\n' >"$tmp/src/base/planted_b.h"
expect 1 '^check-layers: a circle of includes: base/planted_(a|b)\.h -> base/planted_(a|b)\.h -> '
rm "$tmp/src/base/planted_a.h" "$tmp/src/base/planted_b.h"

what="a folder in no layer"
mkdir "$tmp/src/planted"
printf 'int x;\n' >"$tmp/src/planted/x.cpp"
expect 1 '^check-layers: src/planted/ is in no layer'
rm -r "$tmp/src/planted"

what="the tree restored"
expect 0 ': clean$'

what="a directory that does not exist"
rc=0
sh "$check" "$tmp/none" >/dev/null 2>&1 || rc=$?
if [ "$rc" -ne 2 ]; then
  echo "FAIL ($what): want exit 2, got $rc" >&2
  fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] || exit 1
echo "check-layers-test: every planted violation was caught"
