#!/usr/bin/env bash
# Builds and runs every test, from a clean checkout on Debian bookworm:
#   1. installs missing build dependencies (apt), fetches the real Debian driver builds and the
#      headers of Debian's NVIDIA open kernel module packages (RM-table spot-checks);
#   2. default build: unit + integration tests (real drivers, fixtures, bad input);
#   3. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer;
#   4. every libFuzzer target for FUZZ_SECONDS (default 10) each, seeded from the corpus.
# Exit status is non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/fetch-drivers.sh
tools/fetch-kernel-source.sh
# The driver-table tests compare with a CUDA toolkit (cuda.h, cudaTypedefs.h, libcudart); where
# none is installed, fetch Debian's CUDA 12.4 headers and libcudart into the cache.
if [[ -z "${CUDATOOL_CUDA_HOME:-}" && ! -e /usr/local/cuda/include/cuda.h ]]; then
  tools/fetch-drivers.sh --cuda-toolkit
fi
tools/fetch-cuda-tools.sh
jobs=$(nproc)
echo "== default build"
cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs"
ctest --preset default -j "$jobs"
echo "== AddressSanitizer + UBSan build"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$jobs"
echo "== fuzz targets (${FUZZ_SECONDS:-10} s each)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
tools/fuzz.sh "${FUZZ_SECONDS:-10}"
echo "== all tests passed"
