#!/usr/bin/env python3
"""Interleaved A/B of preload-mode recording cost per device ioctl (docs/PERFORMANCE.md, "Call stacks").

    python3 bench/preload_ab.py [--pairs 10] [--depth 12] [--other BUILD_DIR]

Runs bench/programs/stack_loop.c (RM controls on a fake device node, DEPTH frames below main)
under `cudatool trace --mode preload`, with and without stacks, for a small and a large count,
alternating the configurations run after run so that a change in the machine's speed hits all
of them alike. With --other, the same two configurations also run with the cudatool of another
build folder (an older commit, say), interleaved with this one's. The cost per ioctl is the slope
of user and system time (getrusage of the process tree) between the two counts; medians over
the pairs are printed, with the trace's bytes per event. Nothing here asserts a time.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

from stack_overhead import make_stack_loop  # bench/, this script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cudatool_in(build):
    b = os.path.join(build, "cudatool")
    if not (os.path.exists(b) and os.path.exists(os.path.join(build, "libcudatool_preload.so"))):
        sys.exit("preload_ab: %s has no cudatool and preload shim (build it first)" % build)
    return b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10, help="small/large run pairs per configuration")
    ap.add_argument("--depth", type=int, default=12, help="frames between main and the ioctls")
    ap.add_argument("--sites", type=int, default=1,
                    help="call sites taken in turn (1-8; the shim remembers 4 walks: 5 is its worst case)")
    ap.add_argument("--small", type=int, default=20000)
    ap.add_argument("--large", type=int, default=400000)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="this build folder")
    ap.add_argument("--other", help="a second build folder to compare with")
    a = ap.parse_args()
    if a.large <= a.small:
        sys.exit("preload_ab: --large must be above --small")
    builds = [("this", cudatool_in(a.build))]
    if a.other:
        builds.append(("other", cudatool_in(a.other)))
    work = tempfile.mkdtemp(prefix="cudatool-preload-ab-")
    loop, dev = make_stack_loop(work)
    out = os.path.join(work, "out.jsonl")

    def run(cudatool, extra, n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([cudatool, "trace", "-q", "-o", out, "--devices", dev + "/*", "--mode", "preload"]
                       + extra + ["--", loop, os.path.join(dev, "nvidiactl"), str(n), str(a.depth), str(a.sites)],
                       check=True, stdout=subprocess.DEVNULL)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime

    configs = [(b + (" stacks" if not extra else " no-stacks"), tool, extra)
               for b, tool in builds for extra in ([], ["--no-stacks"])]
    res = {name: [] for name, _, _ in configs}
    size = {}
    span = (a.large - a.small) * 1e-6
    for i in range(a.pairs):
        for name, tool, extra in configs:
            us, ss = run(tool, extra, a.small)
            ul, sl = run(tool, extra, a.large)
            size[name] = os.path.getsize(out) / a.large
            res[name].append(((ul - us) / span, (sl - ss) / span))
        print("pair %d/%d done" % (i + 1, a.pairs), file=sys.stderr)
    print("| configuration | user | system | CPU per traced ioctl | bytes per event |")
    print("|---|---:|---:|---:|---:|")
    for name, _, _ in configs:
        v = res[name]
        print("| %s | %.2f µs | %.2f µs | %.2f µs | %.0f |" % (
            name, statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
            statistics.median(x[0] + x[1] for x in v), size[name]))
    print("(medians of %d pairs of %d- and %d-ioctl runs, depth %d, %d call site%s)"
          % (a.pairs, a.large, a.small, a.depth, a.sites, "" if a.sites == 1 else "s"))


if __name__ == "__main__":
    main()
