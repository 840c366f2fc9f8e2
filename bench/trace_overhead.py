#!/usr/bin/env python3
"""What tracing costs: per traced device ioctl, and added to the system calls it does not trace.

    python3 bench/trace_overhead.py [--runs N] [--small 2000] [--large 20000] [--markdown OUT.md]
                                    [--second-level] [--baseline DIR] [--preload-only]

Builds bench/programs/trace_loop.c (N NVIDIA-shaped RM controls on a fake device node,
interleaved with M getppid() calls) and runs it, in ONE hyperfine invocation, untraced and
under: cudatool trace (ptrace, CPU placement "same" and "any"), cudatool trace --mode preload,
strace -f -e trace=ioctl and strace -f --seccomp-bpf -e trace=ioctl (both pinned to one CPU
with taskset, the placement BASELINES.md measured, and --seccomp-bpf also unpinned). Every
configuration runs with a small and a large count; the cost per operation is the slope between
the two (start-up cancels out), from wall-clock medians and from CPU time (user + system of the
whole process tree, which load from other jobs on a shared machine disturbs less). Nothing here
asserts a time.

--second-level makes each ioctl NV2080_CTRL_CMD_GR_GET_INFO with a 5-element list behind its
grInfoList pointer (one buffer of the second level per call) instead of a control without
pointer members. --baseline DIR adds the preload and ptrace configurations of the cudatool in DIR
(another build: before/after a change, in the same hyperfine run). --preload-only runs only the
untraced and preload configurations (cheap enough to repeat many times on a loaded machine).
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
    sys.exit("trace_overhead: build cudatool and its preload shim first (cmake --build build)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=20000)
    ap.add_argument("--cpu", default="0", help="CPU the pinned strace runs use")
    ap.add_argument("--markdown", help="also write the table to this file")
    ap.add_argument("--second-level", action="store_true",
                    help="ioctls with a buffer behind a pointer member (GR_GET_INFO)")
    ap.add_argument("--baseline", help="a directory with another build's cudatool and shim")
    ap.add_argument("--preload-only", action="store_true",
                    help="only the untraced and preload configurations (no ptrace, no strace)")
    a = ap.parse_args()
    for tool in ("hyperfine", "strace", "taskset", "cc"):
        if not shutil.which(tool):
            sys.exit("trace_overhead: %s is required" % tool)
    cudatool = find_cudatool()
    work = tempfile.mkdtemp(prefix="cudatool-trace-bench-")
    loop = os.path.join(work, "trace_loop")
    subprocess.run(["cc", "-O2", "-o", loop, os.path.join(ROOT, "bench", "programs", "trace_loop.c")], check=True)
    dev = os.path.join(work, "dev")
    os.mkdir(dev)
    with open(os.path.join(dev, "nvidiactl"), "wb") as f:
        f.write(b"\0" * 8192)
    out = os.path.join(work, "out")
    devices = dev + "/*"
    configs = [
        ("untraced", []),
        ("cudatool trace (ptrace, --cpu same)", [cudatool, "trace", "-q", "-o", out + ".jsonl", "--devices", devices, "--"]),
        ("cudatool trace (ptrace, --cpu any)", [cudatool, "trace", "-q", "--cpu", "any", "-o", out + ".jsonl", "--devices", devices, "--"]),
        ("cudatool trace --mode preload", [cudatool, "trace", "-q", "--mode", "preload", "-o", out + ".jsonl", "--devices", devices, "--"]),
        ("strace -f -e trace=ioctl (pinned)", ["taskset", "-c", a.cpu, "strace", "-f", "-e", "trace=ioctl", "-o", out + ".strace", "--"]),
        ("strace -f --seccomp-bpf -e trace=ioctl (pinned)", ["taskset", "-c", a.cpu, "strace", "-f", "--seccomp-bpf", "-e", "trace=ioctl", "-o", out + ".strace", "--"]),
        ("strace -f --seccomp-bpf -e trace=ioctl (unpinned)", ["strace", "-f", "--seccomp-bpf", "-e", "trace=ioctl", "-o", out + ".strace", "--"]),
    ]
    if a.baseline:
        other = os.path.join(os.path.abspath(a.baseline), "cudatool")
        configs += [
            ("baseline: cudatool trace (ptrace, --cpu same)", [other, "trace", "-q", "-o", out + ".jsonl", "--devices", devices, "--"]),
            ("baseline: cudatool trace --mode preload", [other, "trace", "-q", "--mode", "preload", "-o", out + ".jsonl", "--devices", devices, "--"]),
        ]
    if a.preload_only:
        configs = [c for c in configs if c[0] == "untraced" or "preload" in c[0]]
    variant = ["gr"] if a.second_level else []
    loads = [("ioctl", a.small, 0), ("ioctl", a.large, 0), ("other", 0, a.small), ("other", 0, a.large)]
    names, cmds = [], []
    for ci, (cname, prefix) in enumerate(configs):
        for kind, n, m in loads:
            names.append((ci, kind, n + m))
            cmds.append(" ".join(prefix + [loop, os.path.join(dev, "nvidiactl"), str(n), str(m)] + variant))
    res_file = os.path.join(work, "res.json")
    argv = ["hyperfine", "-N", "--style", "none", "--runs", str(a.runs), "--warmup", "1", "--export-json", res_file] + cmds
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("trace_overhead: hyperfine failed:\n" + r.stderr)
    with open(res_file) as f:
        results = json.load(f)["results"]
    t = {}
    for (ci, kind, count), x in zip(names, results):
        t[(ci, kind, count)] = (x["median"], x["user"] + x["system"])

    def slope(ci, kind, which):
        lo, hi = t[(ci, kind, a.small)][which], t[(ci, kind, a.large)][which]
        return (hi - lo) / (a.large - a.small)

    base = {k: (slope(0, k, 0), slope(0, k, 1)) for k in ("ioctl", "other")}
    refs = [i for i, c in enumerate(configs) if c[0] == "strace -f --seccomp-bpf -e trace=ioctl (pinned)"]
    rows = []
    for ci, (cname, _) in enumerate(configs):
        io_w, io_c = slope(ci, "ioctl", 0), slope(ci, "ioctl", 1)
        ot_w, ot_c = slope(ci, "other", 0) - base["other"][0], slope(ci, "other", 1) - base["other"][1]
        rows.append((cname, io_w, io_c, ot_w, ot_c))
    ref_w, ref_c = (rows[refs[0]][1], rows[refs[0]][2]) if refs else (0, 0)

    def us(x):
        return "%.2f µs" % (x * 1e6)

    md = ["| configuration | per traced ioctl (wall) | (CPU) | added per other syscall (wall) | (CPU) | strace --seccomp-bpf pinned / this, per ioctl (wall, CPU) |",
          "|---|---:|---:|---:|---:|---:|"]
    for cname, io_w, io_c, ot_w, ot_c in rows:
        ratio = "%.2fx, %.2fx" % (ref_w / io_w, ref_c / io_c) if refs and io_w > 0 and io_c > 0 else "-"
        md.append("| %s | %s | %s | %s | %s | %s |" % (cname, us(io_w), us(io_c), us(ot_w), us(ot_c), ratio))
    text = "\n".join(md) + "\n"
    print("loads: %d and %d operations; %d runs each; slopes between the two\n" % (a.small, a.large, a.runs))
    overhead_common.finish(text, a.markdown, work)


if __name__ == "__main__":
    main()
