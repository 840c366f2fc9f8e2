#!/bin/sh
# Enforces the layers of ARCHITECTURE.md ("Layers") and docs/DEVELOPING.md ("Layout") over the
# sources: each folder of src/ is a layer, and a file may include only files of its own layer and
# of the layers above it in this order:
#
#   base elf cuda rm analysis trace record ab replay cli
#
# A file's layer is its first folder under src/ (record/preload/ and replay/shim/ C files count as
# record and replay). An include is resolved as the compiler resolves a quoted one: beside the
# including file first, then from src/; includes that resolve to no file of src/ (the system's,
# third-party headers) are not checked. Also fails on a circle of includes between files, and on
# a folder of src/ that is in no layer (add it to the order here and in ARCHITECTURE.md).
#
# Usage: tools/check-layers.sh [SRC_DIR]   (default: the src/ beside this script)
# Exit: 0 clean, 1 a violation (each listed as FILE:LINE: why), 2 usage. Run by ctest as `layers`.
set -eu
order="base elf cuda rm analysis trace record ab replay cli"
src=${1:-"$(dirname "$0")/../src"}
if [ $# -gt 1 ] || [ ! -d "$src" ]; then
  echo "usage: tools/check-layers.sh [SRC_DIR] ('$src' is not a directory)" >&2
  exit 2
fi
cd "$src"
find . -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.inc' \) |
  sed 's|^\./||' | LC_ALL=C sort |
  awk -v order="$order" -v src="$src" '
function norm(p,   n, parts, out, k, i) {  # lexical: "a/b/../c" -> "a/c"; "" when above src/
  n = split(p, parts, "/")
  k = 0
  for (i = 1; i <= n; ++i) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == "..") { if (k == 0) return ""; --k; continue }
    out[++k] = parts[i]
  }
  p = ""
  for (i = 1; i <= k; ++i) p = p (i > 1 ? "/" : "") out[i]
  return p
}
function exists(p,   line, r) {
  if (p in known) return known[p]
  r = (getline line < p) >= 0
  if (r) close(p)
  known[p] = r
  return r
}
function layer_of(p) { return substr(p, 1, index(p, "/") - 1) }
function allowed(l,   s, i) {
  s = ""
  for (i = 1; i <= rank[l]; ++i) s = s (i > 1 ? ", " : "") names[i]
  return s
}
function visit(f,   i, t, k) {  # depth-first search for a circle of includes
  state[f] = 1
  path[++depth] = f
  for (i = 1; i <= nedges[f]; ++i) {
    t = edge[f, i]
    if (state[t] == 1) {
      cyc = t
      for (k = depth; k >= 1 && path[k] != t; --k) cyc = path[k] " -> " cyc
      cyc = t " -> " cyc
      printf "check-layers: a circle of includes: %s\n", cyc
      bad = 1
    } else if (state[t] == 0) {
      visit(t)
    }
  }
  --depth
  state[f] = 2
}
BEGIN {
  n = split(order, names, " ")
  for (i = 1; i <= n; ++i) rank[names[i]] = i
  bad = 0
}
{
  f = $0
  files[++nfiles] = f
  state[f] = 0
  if (index(f, "/") == 0) {
    printf "check-layers: src/%s: a file outside every layer folder\n", f
    bad = 1
    next
  }
  l = layer_of(f)
  if (!(l in rank)) {
    if (!(l in told)) {
      printf "check-layers: src/%s/ is in no layer (order: %s)\n", l, order
      told[l] = 1
    }
    bad = 1
    next
  }
  dir = f
  sub(/\/[^\/]*$/, "", dir)
  lineno = 0
  while ((getline line < f) > 0) {
    ++lineno
    if (line !~ /^[ \t]*#[ \t]*include[ \t]*["<]/) continue
    t = line
    sub(/^[ \t]*#[ \t]*include[ \t]*["<]/, "", t)
    sub(/[">].*$/, "", t)
    r = norm(dir "/" t)
    if (r == "" || !exists(r)) r = norm(t)
    if (r == "" || !exists(r) || index(r, "/") == 0) continue
    edge[f, ++nedges[f]] = r
    tl = layer_of(r)
    if (!(tl in rank)) continue  # reported as a folder in no layer
    if (rank[tl] > rank[l]) {
      printf "check-layers: src/%s:%d: %s includes %s (layer %s, below %s); %s may include %s\n",
             f, lineno, l, r, tl, l, l, allowed(l)
      bad = 1
    }
  }
  close(f)
}
END {
  for (i = 1; i <= nfiles; ++i) if (state[files[i]] == 0) visit(files[i])
  if (bad) exit 1
  printf "check-layers: %d files, layers %s: clean\n", nfiles, order
}'
