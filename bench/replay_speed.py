#!/usr/bin/env python3
"""What replay costs (docs/replay.md, "Speed"), measured in one run:

    python3 bench/replay_speed.py [--libcuda PATH/libcuda.so.580.159.04] [--runs N]

1. Per answered call, in process: nv_client (tests/fixtures/nvtrace) is recorded with the preload
   recorder on fake device nodes, then replayed from that recording; each trace holds, per ioctl,
   `dur`, the time the shim spent in the call (the recorder: the call and its recording; the
   replay: matching, writing the answer back and logging it). The medians of both, and the ratio
   replay / recording, over --runs pairs.
2. With --libcuda: the wall time of `cudatool replay` of cuda_probe (tools/cuda_probe, build/cuda_probe) up to
   the end of context creation (cuDevicePrimaryCtxRetain, cuCtxSetCurrent), answered from the
   imported trace_a capture; and of `--bisect` between a replay of it and one with FB_GET_INFO_V2
   injected to fail; and of cuda_probe work (work.c's alloc, copy, module, launch, sync, copy back:
   build/tests/fixtures/kern_sm90.cubin) to its end, with the launch completed without execution
   (--execute none, the default) and with the fake GPU stopping at it (--execute stop: libcuda's
   cuCtxSynchronize then polls until it gives up), and the ratio of the two.
Nothing here asserts a time.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
CUDATOOL = os.path.join(BUILD, "cudatool")
FIX = os.path.join(BUILD, "tests", "fixtures")


def durs(path):
    out = []
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("sys") == "ioctl" and "dur" in e:
                out.append(e["dur"])
    return out


def fake_nodes(d):
    os.makedirs(d, exist_ok=True)
    for n in ("nvidiactl", "nvidia0"):
        with open(os.path.join(d, n), "wb") as f:
            f.write(b"\0" * 8192)
    os.mkfifo(os.path.join(d, "nvidia-uvm"))


def run(argv):
    t = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return p.returncode, time.monotonic() - t, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--libcuda", help="libcuda.so.580.159.04 (unpacked) for the real figures")
    a = ap.parse_args()
    if not os.path.exists(CUDATOOL):
        sys.exit("replay_speed: build cudatool, its shims and the fixtures first")
    tmp = tempfile.mkdtemp(prefix="replay-speed-")
    try:
        rec_d, rep_d = [], []
        for i in range(a.runs):
            dev = os.path.join(tmp, f"dev{i}")
            fake_nodes(dev)
            rec, rep = os.path.join(tmp, f"rec{i}.jsonl"), os.path.join(tmp, f"rep{i}.jsonl")
            client = [os.path.join(FIX, "nv_client"), dev, "full"]
            run([CUDATOOL, "trace", "--mode", "preload", "-q", "-o", rec, "--devices", dev + "/*", "--"] + client)
            shutil.rmtree(dev)
            run([CUDATOOL, "replay", rec, "-q", "-o", rep, "--"] + client)
            rec_d += durs(rec)
            rep_d += durs(rep)
        r, p = statistics.median(rec_d), statistics.median(rep_d)
        print(f"per ioctl in process (median of {len(rep_d)}): recording {r:.0f} ns, replay {p:.0f} ns, "
              f"replay/recording {p / r:.2f}")
        if a.libcuda:
            trace = os.path.join(tmp, "a.jsonl")
            run([CUDATOOL, "import", os.path.join(ROOT, "tests/data/captures/trace_a.jsonl.xz"), "-o", trace,
                 "--driver-version", "580.159.04"])
            probe = [os.path.join(BUILD, "cuda_probe"), os.path.abspath(a.libcuda)]
            walls = [run([CUDATOOL, "replay", trace, "-q", "--"] + probe + ["ctx"])[1] for _ in range(a.runs)]
            print(f"cuda_probe ctx replayed to the end of context creation: median {statistics.median(walls):.3f} s "
                  f"wall of {a.runs}")
            work = probe + ["work", os.path.join(FIX, "kern_sm90.cubin")]
            by = {}
            for how in ("none", "stop"):
                by[how] = statistics.median(
                    [run([CUDATOOL, "replay", trace, "-q", "--execute", how, "--"] + work)[1] for _ in range(a.runs)])
            print(f"cuda_probe work replayed to its end: --execute none median {by['none']:.2f} s, "
                  f"--execute stop {by['stop']:.2f} s wall of {a.runs}; stop/none {by['stop'] / by['none']:.1f}")
            good, bad = os.path.join(tmp, "good.jsonl"), os.path.join(tmp, "bad.jsonl")
            run([CUDATOOL, "replay", trace, "-q", "-o", good, "--"] + probe + ["init"])
            run([CUDATOOL, "replay", trace, "-q", "-o", bad, "--inject",
                 "cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,nth=1,status=NV_ERR_NOT_SUPPORTED", "--"] + probe + ["init"])
            rc, wall, _ = run([CUDATOOL, "replay", "--bisect", good, bad, "--"] + probe + ["init"])
            print(f"bisect of the FB_GET_INFO_V2 failure: exit {rc}, {wall:.2f} s wall")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
