#!/usr/bin/env bash
# Prepares build-dev/, what the device machine needs to record work.c (issue #13's device check)
# and cannot build itself (it has no compilers or packages, and reaches nothing): a stripped
# copy of this build's cudatool (static) and preload shim, the workload built against the CUDA
# toolkit's stub libcuda (it loads the machine's libcuda.so.1 at run time) and its cubin.
#
#   tools/device-prep.sh [WORKLOAD_DIR]     (default: ../shared/data/workload)
#
# Then, with a device lent (one call, ~2 minutes of device time):
#   run  command: bash tools/device-check.sh   carry: ["build-dev"]
# and here, on what came back:
#   python3 tools/device_report.py FILES_AT/work-ptrace.jsonl.zst FILES_AT/work-preload.jsonl.zst
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-../shared/data/workload}
cuda=${CUDA_HOME:-/usr/local/cuda}
for f in build/cudatool build/libcudatool_preload.so; do
  [[ -x $f || -f $f ]] || { echo "device-prep: $f missing: build first (cmake --preset default && cmake --build --preset default)" >&2; exit 2; }
done
for f in "$work/work.c" "$work/kern.cu" "$cuda/include/cuda.h" "$cuda/bin/nvcc" "$cuda/lib64/stubs/libcuda.so"; do
  [[ -e $f ]] || { echo "device-prep: $f missing (WORKLOAD_DIR, CUDA_HOME)" >&2; exit 2; }
done
rm -rf build-dev
mkdir -p build-dev
strip -o build-dev/cudatool build/cudatool
cp build/libcudatool_preload.so build-dev/
cc -O2 -g -fasynchronous-unwind-tables -I"$cuda/include" -o build-dev/work "$work/work.c" \
   -L"$cuda/lib64/stubs" -lcuda
"$cuda/bin/nvcc" -cubin -arch=sm_90 -o build-dev/kern.cubin "$work/kern.cu"
( cd build-dev && sha256sum cudatool libcudatool_preload.so work kern.cubin > SHA256SUMS )
echo "device-prep: build-dev/ ready ($(du -sh build-dev | cut -f1)); run tools/device-check.sh there with carry [\"build-dev\"]"
