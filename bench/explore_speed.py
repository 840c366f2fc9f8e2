#!/usr/bin/env python3
"""What `cudatool explore` costs (docs/explore.md, "Speed"), against what a user would do
instead: a shell loop of `cudatool replay --inject …` calls, one per experiment.

    python3 bench/explore_speed.py --libcuda PATH/libcuda.so.580.159.04 [-j 2] [--loop N]
                                   [--mutate]

The real libcuda 580 answered from the imported trace_a capture, `cuda_probe … ctx`:

1. `cudatool explore --refuse -j J`: wall time, experiments per second.
2. With --mutate: `cudatool explore --mutate -j J` with the default budget (300).
3. The shell loop: the first N (--loop, default 20) refusal experiments of explore's own plan
   (its --json report's `inject` lists), each run as `cudatool replay TRACE --inject … -- CMD`
   one after the other, as a script would; experiments per second of that, and the ratio.

The loop does only the replays: no baseline, no classification, no comparison of replayed traces
(explore does all three), and it runs one replay at a time (explore runs J). Nothing here asserts
a time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
CUDATOOL = os.path.join(BUILD, "cudatool")
PROBE = os.path.join(BUILD, "tests", "fixtures", "cuda_probe")


def explore(trace, lib, extra):
    t = time.monotonic()
    p = subprocess.run([CUDATOOL, "explore", trace, "--json", "-q", *extra, "--", PROBE, lib, "ctx"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t
    if p.returncode not in (0, 1):
        sys.exit(f"explore failed ({p.returncode}): {p.stderr}")
    return json.loads(p.stdout), wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--libcuda", required=True, help="libcuda.so.580.159.04 (unpacked)")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--loop", type=int, default=20, help="experiments the shell loop runs")
    ap.add_argument("--mutate", action="store_true", help="also time --mutate's default budget")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="explore-bench-")
    trace = os.path.join(tmp, "trace_a.jsonl")
    subprocess.run([CUDATOOL, "import", os.path.join(ROOT, "tests/data/captures/trace_a.jsonl.xz"),
                    "-o", trace, "--driver-version", "580.159.04"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep, wall = explore(trace, a.libcuda, ["--refuse", "-j", str(a.j)])
    n = len(rep["experiments"])
    print(f"explore --refuse -j {a.j}: {n} experiments in {wall:.1f} s: {n / wall:.2f} per s "
          f"(baseline {rep['baseline']['wall_s']:.2f} s)")
    if a.mutate:
        m, mwall = explore(trace, a.libcuda, ["--mutate", "-j", str(a.j)])
        k = len(m["experiments"])
        print(f"explore --mutate -j {a.j} (budget 300, {m['mutate_candidates']} candidates): "
              f"{k} experiments in {mwall:.1f} s: {k / mwall:.2f} per s")
    plan = sorted(rep["experiments"], key=lambda e: e["index"])[: a.loop]
    t = time.monotonic()
    for e in plan:
        argv = [CUDATOOL, "replay", trace, "-q"]
        for spec in e["inject"]:
            argv += ["--inject", spec]
        subprocess.run(argv + ["--", PROBE, a.libcuda, "ctx"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    lwall = time.monotonic() - t
    print(f"shell loop of cudatool replay --inject: {len(plan)} experiments in {lwall:.1f} s: "
          f"{len(plan) / lwall:.2f} per s")
    print(f"ratio explore / loop (experiments per second): {(n / wall) / (len(plan) / lwall):.2f}")


if __name__ == "__main__":
    main()
