#!/usr/bin/env bash
# The main job, on a fresh Debian bookworm machine: install what is missing, build, and analyse
# a real libcuda — the system's libcuda.so.1 when there is one, otherwise a Debian libcuda1
# package downloaded from the non-free archive: what the build is (info), its API surface
# (exports --summary), the GPU programs it carries (cubins --summary) and the start of its
# function map (functions).
#
#   tools/quickstart.sh [LIB]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target cudatool -j "$(nproc)"
lib=${1:-}
if [[ -z "$lib" ]]; then
  if build/cudatool info >/dev/null 2>&1; then
    lib=""  # the system's libcuda.so.1; cudatool says which file it used
  else
    echo "quickstart: no system libcuda.so.1; downloading Debian's libcuda1 (non-free)"
    version=$(awk '$1=="libcuda1" && $3=="bookworm" {sub(/-.*/,"",$2); print $2; exit}' tools/drivers.list)
    tools/fetch-drivers.sh --only "$version"
    lib=${CUDATOOL_DRIVERS:-$HOME/.cache/cudatool/drivers}/libcuda.so.$version
  fi
fi
set -x
build/cudatool info ${lib:+"$lib"}
build/cudatool exports --summary ${lib:+"$lib"}
build/cudatool cubins --summary ${lib:+"$lib"}
build/cudatool functions ${lib:+"$lib"} | sed -n 1,12p
