#!/usr/bin/env python3
"""What call stacks cost per traced device ioctl (docs/PERFORMANCE.md, "Call stacks").

    python3 bench/stack_overhead.py [--runs N] [--depth 12] [--markdown OUT.md]

Builds bench/programs/stack_loop.c (N RM controls on a fake device node, made DEPTH frames below
main) and runs it, in ONE hyperfine invocation, untraced and under: cudatool trace --mode preload
with and without stacks, cudatool trace (ptrace, --cpu same) with and without stacks, and the peer
that also unwinds, strace -k -f -e trace=ioctl, with strace -f --seccomp-bpf -e trace=ioctl for
reference (both pinned with taskset to the CPU cudatool pins itself to, as bench/trace_overhead.py
does). Each configuration runs with a small and a large count, chosen per configuration so that a
run takes about the same time (strace -k is slow); the cost per ioctl is the slope between the two
(start-up cancels out), from wall-clock medians and from CPU time (user + system of the process
tree). Nothing here asserts a time.
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
    sys.exit("stack_overhead: build cudatool and its preload shim first (cmake --build build)")


def make_stack_loop(work):
    """Builds bench/programs/stack_loop.c in WORK and a fake device folder for it: (program, dev)."""
    loop = os.path.join(work, "stack_loop")
    subprocess.run(["cc", "-O2", "-fasynchronous-unwind-tables", "-o", loop,
                    os.path.join(ROOT, "bench", "programs", "stack_loop.c")], check=True)
    dev = os.path.join(work, "dev")
    os.mkdir(dev)
    with open(os.path.join(dev, "nvidiactl"), "wb") as f:
        f.write(b"\0" * 8192)
    return loop, dev


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--depth", type=int, default=12, help="frames between main and the ioctls")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every count")
    ap.add_argument("--cpu", default="0", help="CPU the pinned strace runs use")
    ap.add_argument("--markdown", help="also write the table to this file")
    a = ap.parse_args()
    for tool in ("hyperfine", "strace", "taskset", "cc"):
        if not shutil.which(tool):
            sys.exit("stack_overhead: %s is required" % tool)
    cudatool = find_cudatool()
    work = tempfile.mkdtemp(prefix="cudatool-stack-bench-")
    loop, dev = make_stack_loop(work)
    out = os.path.join(work, "out")
    devices = dev + "/*"
    ct = [cudatool, "trace", "-q", "-o", out + ".jsonl", "--devices", devices]
    # (name, prefix, small count, large count)
    configs = [
        ("untraced", [], 20000, 200000),
        ("cudatool trace --mode preload --no-stacks", ct + ["--mode", "preload", "--no-stacks", "--"], 20000, 200000),
        ("cudatool trace --mode preload (stacks)", ct + ["--mode", "preload", "--"], 20000, 200000),
        ("cudatool trace (ptrace) --no-stacks", ct + ["--no-stacks", "--"], 2000, 20000),
        ("cudatool trace (ptrace, stacks)", ct + ["--"], 2000, 20000),
        ("strace -f --seccomp-bpf -e trace=ioctl (pinned)",
         ["taskset", "-c", a.cpu, "strace", "-f", "--seccomp-bpf", "-e", "trace=ioctl", "-o", out + ".strace", "--"], 2000, 20000),
        ("strace -k -f -e trace=ioctl (pinned)",
         ["taskset", "-c", a.cpu, "strace", "-k", "-f", "-e", "trace=ioctl", "-o", out + ".strace", "--"], 100, 600),
    ]
    # How many frames each ioctl's stack really has (what the compiler made of the recursion, with
    # libc's start-up): counted in a short preload-mode recording, not assumed.
    probe = out + "-probe.jsonl"
    subprocess.run([cudatool, "trace", "-q", "-o", probe, "--devices", devices, "--mode", "preload", "--",
                    loop, os.path.join(dev, "nvidiactl"), "3", str(a.depth)],
                   check=True)
    frames = 0
    records = {}  # v3 stack records: id -> frames
    with open(probe) as f:
        for line in f:
            ev = json.loads(line)
            if "stack_record" in ev:
                records[ev["stack_record"]["id"]] = ev["stack_record"]["stack"]
            if ev.get("sys") == "ioctl":
                frames = len(ev.get("stack", records.get(ev.get("stack_ref"), [])))
                break
    names, cmds = [], []
    for ci, (cname, prefix, small, large) in enumerate(configs):
        for count in (int(small * a.scale), int(large * a.scale)):
            names.append((ci, count))
            cmds.append(" ".join(prefix + [loop, os.path.join(dev, "nvidiactl"), str(count), str(a.depth)]))
    res_file = os.path.join(work, "res.json")
    argv = ["hyperfine", "-N", "--style", "none", "--runs", str(a.runs), "--warmup", "1", "--export-json", res_file] + cmds
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("stack_overhead: hyperfine failed:\n" + r.stderr)
    with open(res_file) as f:
        results = json.load(f)["results"]
    t = {}
    for (ci, count), x in zip(names, results):
        t[(ci, count)] = (x["median"], x["user"] + x["system"])

    def slope(ci, which):
        small, large = int(configs[ci][2] * a.scale), int(configs[ci][3] * a.scale)
        return (t[(ci, large)][which] - t[(ci, small)][which]) / (large - small)

    rows = [(c[0], slope(i, 0), slope(i, 1)) for i, c in enumerate(configs)]
    by = {name: (w, c) for name, w, c in rows}
    ref_k = by["strace -k -f -e trace=ioctl (pinned)"]

    def us(x):
        return "%.2f µs" % (x * 1e6)

    base = by["untraced"]
    md = ["| configuration (depth %d: %d frames per ioctl) | per traced ioctl (wall) | (CPU) | added over untraced (wall) | (CPU) | strace -k / this (wall, CPU) |" % (a.depth, frames),
          "|---|---:|---:|---:|---:|---:|"]
    for name, w, c in rows:
        ratio = "%.1fx, %.1fx" % (ref_k[0] / w, ref_k[1] / c) if w > 0 and c > 0 and name != "untraced" else "-"
        md.append("| %s | %s | %s | %s | %s | %s |" % (name, us(w), us(c), us(w - base[0]), us(c - base[1]), ratio))
    pre = by["cudatool trace --mode preload (stacks)"][0] - by["cudatool trace --mode preload --no-stacks"][0]
    pt = by["cudatool trace (ptrace, stacks)"][0] - by["cudatool trace (ptrace) --no-stacks"][0]
    md.append("")
    pre_c = by["cudatool trace --mode preload (stacks)"][1] - by["cudatool trace --mode preload --no-stacks"][1]
    pt_c = by["cudatool trace (ptrace, stacks)"][1] - by["cudatool trace (ptrace) --no-stacks"][1]
    md.append("stacks add %s wall / %s CPU per ioctl in preload mode and %s / %s in ptrace mode." % (us(pre), us(pre_c), us(pt), us(pt_c)))
    text = "\n".join(md) + "\n"
    print("depth %d; %d runs each; slopes between each configuration's two counts\n" % (a.depth, a.runs))
    overhead_common.finish(text, a.markdown, work)


if __name__ == "__main__":
    main()
