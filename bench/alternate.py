#!/usr/bin/env python3
"""Two commands of a few milliseconds, timed in alternation: which one is faster, and by how much.

    python3 bench/alternate.py [--pairs 300] [--sep ::] -- OLD ARGV... -- NEW ARGV...

(--sep names another separator for commands that hold a "--" themselves:
`--sep :: :: cudatool trace -- prog :: cudatool trace -- prog`.)

Runs A, B, B, A, A, B, … (each pair in alternating order, after 5 warm-up pairs), with stdout and
stderr on /dev/null, and prints the median of each and the median (and quartiles) of the paired
differences B - A. On the 2-vCPU VMs this project is measured on, the speed of the whole machine
drifts by 10 % over minutes, so that two hyperfine runs one after the other disagree by more than
a 0.1 ms change of a 3 ms command; paired differences taken in alternation cancel the drift. The
same binary against itself gives a median difference within ±0.01 ms over 300 pairs.

Each run is a posix_spawn and a waitpid from this process, timed with the monotonic clock: the
times include Python's share of the spawn (~0.1 ms, the same on both sides). A command that
exits non-zero in the warm-up stops it with status 2. Nothing here asserts a time.
"""
import argparse
import os
import shutil
import statistics
import sys
import time


def run(argv, devnull, status=None):
    t0 = time.monotonic_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1),
                                        (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, st = os.waitpid(pid, 0)
    elapsed = (time.monotonic_ns() - t0) / 1e6
    if status is not None:
        status.append(os.waitstatus_to_exitcode(st))
    return elapsed


def main():
    parser = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip().split("\n")[0].strip(),
                                     description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300,
                        help="alternated pairs timed after 5 warm-up pairs (at least 2)")
    parser.add_argument("--sep", default="--",
                        help="what comes before each command (default --)")
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="COMMANDS",
                        help="SEP A-ARGV... SEP B-ARGV...")
    args = parser.parse_args()
    rest = args.rest
    sep = args.sep
    if rest[:1] == ["--"] and sep != "--":
        rest = rest[1:]  # argparse's own end of options
    if rest.count(sep) != 2 or rest[0] != sep:
        parser.error(f"give two commands, each after {sep}")
    cut = rest.index(sep, 1)
    a, b = rest[1:cut], rest[cut + 1:]
    if not a or not b:
        parser.error(f"give two commands, each after {sep}")
    if args.pairs < 2:
        parser.error("--pairs must be at least 2")
    for argv in (a, b):
        if shutil.which(argv[0]) is None:
            parser.error(f"{argv[0]}: no such program")
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(5):
        status = []
        run(a, devnull, status)
        run(b, devnull, status)
        for argv, code in zip((a, b), status):
            if code != 0:
                # A failing command's time says nothing about the work it was meant to do.
                print(f"alternate.py: {' '.join(argv)} exited with status {code}", file=sys.stderr)
                return 2
    ta, tb, diff = [], [], []
    for k in range(args.pairs):
        if k % 2:
            y = run(b, devnull)
            x = run(a, devnull)
        else:
            x = run(a, devnull)
            y = run(b, devnull)
        ta.append(x)
        tb.append(y)
        diff.append(y - x)
    q = statistics.quantiles(diff, n=4)
    print(f"A {statistics.median(ta):.3f} ms  B {statistics.median(tb):.3f} ms  "
          f"B - A: median {statistics.median(diff):+.3f} ms (quartiles {q[0]:+.3f}, {q[2]:+.3f}), "
          f"{args.pairs} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
