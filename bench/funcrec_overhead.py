#!/usr/bin/env python3
"""What function recording costs per recorded call: preload-mode `cudatool trace --functions`
against uftrace 0.13 patching the same library (issue #31's "≤ 2x uftrace's per-call overhead").

    python3 bench/funcrec_overhead.py [--runs N] [--small 20000] [--large 200000] [--markdown OUT.md]

The load is the function recorder's fixture (tests/fixtures/funcrec): fr_probe dlopens
libfr_fixture.so and calls fr_tree N times, 7 calls of the library each (fr_tree, fr_mid twice,
fr_leaf and fr_leaf2 twice each). In ONE hyperfine invocation it runs untraced, under
`cudatool trace --mode preload --functions --functions-lib LIB` (every function of the library
patched; the -o trace written) and under `uftrace record -P .@libfr_fixture.so` (uftrace's
dynamic patching of every function of the library; the unstripped copy, so uftrace names them
from .symtab). Each with a small and a large N: the cost per call is the slope between the two
(start-up, patching and the library's load cancel out), from wall-clock medians and from CPU
time (user + system of the process tree). The untraced slope (the calls themselves) is taken
off both. Nothing here asserts a time. Needs the build's fixtures (cmake --build build), uftrace
and hyperfine.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import overhead_common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALLS_PER_LOOP = 7


def find_build():
    for d in ("build-bench", "build"):
        b = os.path.join(ROOT, d)
        probe = os.path.join(b, "tests", "fixtures", "funcrec", "fr_probe")
        if os.path.exists(os.path.join(b, "cudatool")) and os.path.exists(probe):
            return b
    sys.exit("funcrec_overhead: build cudatool and the test fixtures first (cmake --build build)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--small", type=int, default=20000, help="fr_tree calls of the small load")
    ap.add_argument("--large", type=int, default=200000, help="fr_tree calls of the large load")
    ap.add_argument("--markdown", help="also write the table to this file")
    a = ap.parse_args()
    for tool in ("hyperfine", "uftrace"):
        if not shutil.which(tool):
            sys.exit("funcrec_overhead: %s is required" % tool)
    build = find_build()
    cudatool = os.path.join(build, "cudatool")
    fix = os.path.join(build, "tests", "fixtures", "funcrec")
    probe, lib = os.path.join(fix, "fr_probe"), os.path.join(fix, "libfr_fixture.so.1.2.3")
    work = tempfile.mkdtemp(prefix="cudatool-funcrec-bench-")
    configs = [
        ("untraced", []),
        ("cudatool trace --mode preload --functions",
         ["env", "FR_PROBE_LEAVE_TO_SHIM=1", cudatool, "trace", "-q", "--mode", "preload", "--functions",
          "--functions-lib", lib, "--env", "none", "--no-stacks", "-o", os.path.join(work, "t.jsonl"), "--force", "--"]),
        ("uftrace 0.13 record -P .@libfr_fixture.so",
         ["uftrace", "record", "--force", "-d", os.path.join(work, "u"), "-P", ".@libfr_fixture.so"]),
    ]
    names, cmds = [], []
    for ci, (_, prefix) in enumerate(configs):
        for n in (a.small, a.large):
            names.append((ci, n))
            cmds.append(" ".join(prefix + [probe, lib, "loop", str(n)]))
    res_file = os.path.join(work, "res.json")
    argv = ["hyperfine", "-N", "--style", "none", "--runs", str(a.runs), "--warmup", "1",
            "--export-json", res_file] + cmds
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("funcrec_overhead: hyperfine failed:\n" + r.stderr)
    with open(res_file) as f:
        results = json.load(f)["results"]
    t = {key: (x["median"], x["user"] + x["system"]) for key, x in zip(names, results)}
    calls = CALLS_PER_LOOP * (a.large - a.small)

    def slope(ci, which):
        return (t[(ci, a.large)][which] - t[(ci, a.small)][which]) / calls

    base = (slope(0, 0), slope(0, 1))
    rows = [(name, slope(ci, 0) - base[0], slope(ci, 1) - base[1]) for ci, (name, _) in enumerate(configs)]
    uf = rows[2]

    def ns(x):
        return "%.0f ns" % (x * 1e9)

    md = ["| configuration | added per recorded call (wall) | (CPU) | this / uftrace (wall, CPU) |",
          "|---|---:|---:|---:|",
          "| untraced (the call itself) | %s | %s | - |" % (ns(base[0]), ns(base[1]))]
    for name, w, c in rows[1:]:
        ratio = "%.2fx, %.2fx" % (w / uf[1], c / uf[2]) if uf[1] > 0 and uf[2] > 0 else "-"
        md.append("| %s | %s | %s | %s |" % (name, ns(w), ns(c), ratio))
    text = "\n".join(md) + "\n"
    print("loads: %d and %d fr_tree calls (%d library calls each); %d runs each; slopes between the two\n"
          % (a.small, a.large, CALLS_PER_LOOP, a.runs))
    overhead_common.finish(text, a.markdown, work)


if __name__ == "__main__":
    main()
