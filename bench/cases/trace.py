"""Issue #5: `cudatool trace` against strace on a loop of NVIDIA-shaped ioctls, and `import`
against jq re-emitting the same capture. Per-operation costs (the figures the issue asks for)
come from bench/trace_overhead.py; these are whole-command ratios."""
import os
import subprocess
import tempfile


def trace_loop(ctx, work):
    """bench/programs/trace_loop.c built in `work`, and a fake device node for it: (program, dev
    directory)."""
    loop = os.path.join(work, "trace_loop")
    subprocess.run(["cc", "-O2", "-o", loop, os.path.join(ctx.root, "bench", "programs", "trace_loop.c")],
                   check=True)
    dev = os.path.join(work, "dev")
    os.mkdir(dev)
    with open(os.path.join(dev, "nvidiactl"), "wb") as f:
        f.write(b"\0" * 8192)
    return loop, dev


def cases(ctx):
    work = tempfile.mkdtemp(prefix="cudatool-bench-trace-")
    loop, dev = trace_loop(ctx, work)
    out = os.path.join(work, "t.jsonl")
    load = [loop, os.path.join(dev, "nvidiactl"), "20000", "20000"]
    common = ["-q", "-o", out, "--devices", dev + "/*", "--"]
    strace = ["strace", "-f", "-o", os.path.join(work, "s.txt"), "-e", "trace=ioctl"]
    result = [{
        "name": "trace 20k ioctls + 20k getppid (ptrace)", "file": "trace_loop", "runs": 5,
        "cudatool": [ctx.cudatool, "trace"] + common + load,
        "baselines": {
            "strace -f --seccomp-bpf -e trace=ioctl (pinned)":
                ["taskset", "-c", "0"] + strace[:1] + ["--seccomp-bpf"] + strace[1:] + load,
            "strace -f -e trace=ioctl (pinned)": ["taskset", "-c", "0"] + strace + load,
        },
    }, {
        "name": "trace 20k ioctls + 20k getppid (preload)", "file": "trace_loop", "runs": 5,
        "cudatool": [ctx.cudatool, "trace", "--mode", "preload"] + common + load,
        "baselines": {
            "strace -f --seccomp-bpf -e trace=ioctl (pinned)":
                ["taskset", "-c", "0"] + strace[:1] + ["--seccomp-bpf"] + strace[1:] + load,
        },
    }]
    # The real captures ship in tests/data/captures ($CUDATOOL_CAPTURES overrides).
    for d in (os.environ.get("CUDATOOL_CAPTURES") or os.path.join(ctx.root, "tests", "data", "captures"),):
        cap = os.path.join(d, "trace_a.jsonl.xz")
        if os.path.exists(cap):
            result.append({
                "name": "import a capture (753 events, xz)", "file": "trace_a.jsonl.xz", "shell": True,
                "cudatool": "%s import %s -o %s" % (ctx.cudatool, cap, os.path.join(work, "a.jsonl")),
                "baselines": {"xz -dc | jq -c .": "xz -dc %s | jq -c . > %s" % (cap, os.path.join(work, "a.jq"))},
            })
            break
    return result
