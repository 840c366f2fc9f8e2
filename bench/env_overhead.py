#!/usr/bin/env python3
"""What recording environment events costs: per stat() of a path outside --env (every program
stats files; under ptrace each one now stops, because a seccomp filter sees the pointer, not the
path), per stat() of a path in --env (recorded), and added to other system calls.

    python3 bench/env_overhead.py [--runs N] [--small 2000] [--large 20000] [--markdown OUT.md]

Builds bench/programs/stat_loop.c (N stat() of one path, interleaved with M getppid()) and runs
it, in ONE hyperfine invocation, untraced and under cudatool trace in both modes with --env none
(before: no path call stops), the default --env (after: stat stops in ptrace mode and is matched
against the globs, the path is not in them) and an --env that holds the path (the stat is
recorded), and under strace tracing the same call (-e trace=newfstatat, --seccomp-bpf, pinned: the
tool a user would use to see a program's stat calls). The cost per operation is the slope between
a small and a large count, from wall-clock medians and from CPU time (user + system). Nothing here
asserts a time.
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


def find_cudatool():
    for d in ("build-bench", "build"):
        b = os.path.join(ROOT, d, "cudatool")
        if os.path.exists(b) and os.path.exists(os.path.join(ROOT, d, "libcudatool_preload.so")):
            return b
    sys.exit("env_overhead: build cudatool and its preload shim first (cmake --build build)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=20000)
    ap.add_argument("--cpu", default="0", help="CPU the pinned strace runs use")
    ap.add_argument("--markdown", help="also write the table to this file")
    a = ap.parse_args()
    for tool in ("hyperfine", "strace", "taskset", "cc"):
        if not shutil.which(tool):
            sys.exit("env_overhead: %s is required" % tool)
    cudatool = find_cudatool()
    work = tempfile.mkdtemp(prefix="cudatool-env-bench-")
    loop = os.path.join(work, "stat_loop")
    subprocess.run(["cc", "-O2", "-o", loop, os.path.join(ROOT, "bench", "programs", "stat_loop.c")], check=True)
    fake = os.path.join(work, "sys", "bus", "pci", "devices", "0000:45:00.0")
    os.makedirs(fake)
    target = os.path.join(fake, "config")
    with open(target, "wb") as f:
        f.write(b"\xde\x10\x35\x23" + b"\0" * 252)
    out = os.path.join(work, "out.jsonl")
    devices = os.path.join(work, "dev") + "/*"
    in_env = os.path.join(work, "sys", "bus", "pci", "devices") + "/*"

    def trace(mode, env):
        return [cudatool, "trace", "-q", "--mode", mode, "-o", out, "--devices", devices] + \
            (["--env", env] if env is not None else []) + ["--"]

    configs = [
        ("untraced", [], target),
        ("cudatool trace (ptrace) --env none: stat does not stop (before)", trace("ptrace", "none"), target),
        ("cudatool trace (ptrace), default --env: a stat outside it (after)", trace("ptrace", None), target),
        ("cudatool trace (ptrace) --env holding the path: stat recorded", trace("ptrace", in_env), target),
        ("cudatool trace --mode preload --env none (before)", trace("preload", "none"), target),
        ("cudatool trace --mode preload, default --env: a stat outside it (after)", trace("preload", None), target),
        ("cudatool trace --mode preload --env holding the path: stat recorded", trace("preload", in_env), target),
        ("strace -f --seccomp-bpf -e trace=newfstatat (pinned)",
         ["taskset", "-c", a.cpu, "strace", "-f", "--seccomp-bpf", "-e", "trace=newfstatat", "-o", out + ".strace", "--"],
         target),
    ]
    loads = [("stat", a.small, 0), ("stat", a.large, 0), ("other", 0, a.small), ("other", 0, a.large)]
    names, cmds = [], []
    for ci, (cname, prefix, path) in enumerate(configs):
        for kind, n, m in loads:
            names.append((ci, kind, n + m))
            cmds.append(" ".join(prefix + [loop, path, str(n), str(m)]))
    res_file = os.path.join(work, "res.json")
    argv = ["hyperfine", "-N", "--style", "none", "--runs", str(a.runs), "--warmup", "1", "--export-json", res_file] + cmds
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("env_overhead: hyperfine failed:\n" + r.stderr)
    with open(res_file) as f:
        results = json.load(f)["results"]
    t = {}
    for (ci, kind, count), x in zip(names, results):
        t[(ci, kind, count)] = (x["median"], x["user"] + x["system"])

    def slope(ci, kind, which):
        lo, hi = t[(ci, kind, a.small)][which], t[(ci, kind, a.large)][which]
        return (hi - lo) / (a.large - a.small)

    base = {k: (slope(0, k, 0), slope(0, k, 1)) for k in ("stat", "other")}
    ref = len(configs) - 1  # strace
    rows = []
    for ci, (cname, _, _) in enumerate(configs):
        st_w, st_c = slope(ci, "stat", 0) - base["stat"][0], slope(ci, "stat", 1) - base["stat"][1]
        ot_w, ot_c = slope(ci, "other", 0) - base["other"][0], slope(ci, "other", 1) - base["other"][1]
        rows.append((cname, st_w, st_c, ot_w, ot_c))
    ref_w, ref_c = rows[ref][1], rows[ref][2]

    def us(x):
        return "%.2f µs" % (x * 1e6)

    md = ["| configuration | added per stat() (wall) | (CPU) | added per other syscall (wall) | (CPU) | strace / this, per stat (wall, CPU) |",
          "|---|---:|---:|---:|---:|---:|"]
    for ci, (cname, st_w, st_c, ot_w, ot_c) in enumerate(rows):
        ratio = "%.2fx, %.2fx" % (ref_w / st_w, ref_c / st_c) if ci > 0 and st_w > 0 and st_c > 0 else "-"
        md.append("| %s | %s | %s | %s | %s | %s |" % (cname, us(st_w), us(st_c), us(ot_w), us(ot_c), ratio))
    text = "\n".join(md) + "\n"
    print("untraced: %s per stat(), %s per getppid() (wall)" % (us(base["stat"][0]), us(base["other"][0])))
    print("loads: %d and %d operations; %d runs each; slopes between the two, less the untraced slope\n"
          % (a.small, a.large, a.runs))
    overhead_common.finish(text, a.markdown, work)


if __name__ == "__main__":
    main()
