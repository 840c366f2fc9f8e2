"""Issue #13 (environment events): `cudatool trace` on a loop of stat() calls — outside --env
(each stops under ptrace and is matched, none recorded) and inside it (each recorded) — against
strace tracing the same system call. Per-operation costs: bench/env_overhead.py."""
import os
import subprocess
import tempfile


def cases(ctx):
    work = tempfile.mkdtemp(prefix="cudatool-bench-env-")
    loop = os.path.join(work, "stat_loop")
    subprocess.run(["cc", "-O2", "-o", loop, os.path.join(ctx.root, "bench", "programs", "stat_loop.c")],
                   check=True)
    devs = os.path.join(work, "sys", "bus", "pci", "devices")
    os.makedirs(os.path.join(devs, "0000:45:00.0"))
    path = os.path.join(devs, "0000:45:00.0", "config")
    with open(path, "wb") as f:
        f.write(b"\xde\x10\x35\x23" + b"\0" * 252)
    out = os.path.join(work, "t.jsonl")
    load = [loop, path, "20000", "0"]
    strace = ["taskset", "-c", "0", "strace", "-f", "--seccomp-bpf", "-e", "trace=newfstatat",
              "-o", os.path.join(work, "s.txt")]
    return [{
        "name": "trace 20k stat() outside --env (ptrace)", "file": "stat_loop", "runs": 5,
        "cudatool": [ctx.cudatool, "trace", "-q", "-o", out, "--"] + load,
        "baselines": {"strace -f --seccomp-bpf -e trace=newfstatat (pinned)": strace + load},
    }, {
        "name": "trace 20k stat() in --env, recorded (ptrace)", "file": "stat_loop", "runs": 5,
        "cudatool": [ctx.cudatool, "trace", "-q", "-o", out, "--env", devs + "/*", "--"] + load,
        "baselines": {"strace -f --seccomp-bpf -e trace=newfstatat (pinned)": strace + load},
    }, {
        "name": "trace 20k stat() in --env, recorded (preload)", "file": "stat_loop", "runs": 5,
        "cudatool": [ctx.cudatool, "trace", "-q", "--mode", "preload", "-o", out, "--env", devs + "/*", "--"] + load,
        "baselines": {"strace -f --seccomp-bpf -e trace=newfstatat (pinned)": strace + load},
    }]
