#!/usr/bin/env bash
# Runs on the device machine (an NVIDIA GPU, the driver, nothing else): records work.c with
# `cudatool trace` in both modes and writes under $OUT what tools/device_report.py reads here.
# Needs build-dev/ (tools/device-prep.sh) carried along. Every step is bounded by a timeout,
# and a failing step is written down, not fatal: what ran comes back.
#
#   $OUT/machine.txt                  uname, the driver's version file, nvidia-smi -L
#   $OUT/work-untraced.out            the workload's output without a recorder (its baseline)
#   $OUT/work-{ptrace,preload}.jsonl.zst   the recordings (stacks, environment, buffers)
#   $OUT/work-{ptrace,preload}.out    the workload's and the recorder's output, exit status
#   $OUT/info-libcuda.txt             cudatool info on the libcuda the machine loaded
#   $OUT/steps.txt                    each step, its exit status and seconds
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:?OUT is not set: run this through the device tool}
dev=$PWD/build-dev
ct=$dev/cudatool
steps=$out/steps.txt
: > "$steps"
step() {  # step NAME TIMEOUT CMD... (output to $out/NAME.out)
  local name=$1 limit=$2 t0 rc
  shift 2
  t0=$(date +%s%N)
  timeout "$limit" "$@" > "$out/$name.out" 2>&1
  rc=$?
  echo "$name rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> "$steps"
}
if [[ ! -x $ct || ! -f $dev/work ]]; then
  echo "device-check: build-dev/ missing (tools/device-prep.sh, carry [\"build-dev\"])" | tee "$steps" >&2
  exit 2
fi
( cd "$dev" && sha256sum -c SHA256SUMS ) >> "$steps" 2>&1
{ uname -a; cat /proc/driver/nvidia/version 2>&1; nvidia-smi -L 2>&1; ls -l /dev/nvidia* 2>&1; } > "$out/machine.txt"
cd "$dev"
step work-untraced 120 ./work kern.cubin
echo "work-untraced: $(cat "$out/work-untraced.out" | tail -1)" >> "$steps"
step work-ptrace 300 "$ct" trace -o "$out/work-ptrace.jsonl.zst" -- ./work kern.cubin
step work-preload 300 "$ct" trace --mode preload -o "$out/work-preload.jsonl.zst" -- ./work kern.cubin
lib=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 / {print $NF; exit}')
if [[ -n $lib ]]; then
  step info-libcuda 60 "$ct" info "$(readlink -f "$lib")"
  mv "$out/info-libcuda.out" "$out/info-libcuda.txt"
fi
ls -l "$out" >> "$steps"
cat "$steps"
