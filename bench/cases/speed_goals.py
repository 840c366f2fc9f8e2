"""Issue #36's table in one run: where users wait, each against the tool they would use instead.

- `functions LIB` (default names: the map and the routing-table names) against
  `readelf --debug-dump=frames`, on every cached Debian build and on 580.159.04, on all the
  bench's CPUs (it uses two threads) and pinned to one;
- `decode` and `decode --json` of a 150,000-event synthetic trace (bench/gen_trace.py) to
  /dev/null against `jq -c .` (parse and print only); events per second = 150,000 / the median;
- `trace --no-stacks` of 5,000 NVIDIA-shaped ioctls (bench/programs/trace_loop.c on a fake
  device node) against `strace -f --seccomp-bpf -e trace=ioctl`; `trace` with stacks against
  `strace -f -k -e trace=ioctl`;
- `index` of the 96 MB 580 build against `objdump -d --no-show-raw-insn`, on every CPU the
  bench was given (the issue's "quiet 2-core machine"; `index` sweeps .text on two threads, objdump
  uses one). The other cases stay pinned.

    python3 bench/run.py --cases speed_goals --runs 5

run.py pins every command to one CPU (`--cpu`), so "on one vCPU" holds for all of them but
`index` and the all-CPUs `functions` rows. The ratio
column is baseline / cudatool: the issue's "0.45x" style (cudatool / baseline) is its inverse."""
import importlib.util
import os
import tempfile


def sibling(name):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("speed_goals_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def function_cases(ctx, p580):
    # `functions` reads the FDEs and the driver tables on two threads (function_names.hpp), so,
    # like `index`, it runs on every CPU the bench was given; the pinned row beside it is the same
    # command on one CPU, where the helper thread only takes turns with the main one.
    libs = list(ctx.drivers) + ([("580.159.04", p580)] if p580 else [])
    out = []
    for version, lib in libs:
        for label, all_cpus in (("functions (default names), all CPUs", True),
                                ("functions (default names), one CPU", False)):
            out.append({"name": label, "file": version, "runs": 20, "all_cpus": all_cpus,
                        "cudatool": [ctx.cudatool, "functions", lib],
                        "baselines": {"readelf --debug-dump=frames":
                                      ["readelf", "--debug-dump=frames", lib]}})
    return out


def decode_cases(ctx, work):
    decode = sibling("decode")
    data = decode.captures(ctx)
    if data is None:
        return []
    trace = decode.synthetic_trace(ctx, data, work, 150000)
    jq = {"jq -c . (parse and print only)": "jq -c . %s > /dev/null" % trace}
    return [{"name": "decode (text), 150k events", "file": "synthetic", "shell": True, "runs": 5,
             "cudatool": "%s decode %s > /dev/null" % (ctx.cudatool, trace), "baselines": jq},
            {"name": "decode --json, 150k events", "file": "synthetic", "shell": True, "runs": 5,
             "cudatool": "%s decode --json %s > /dev/null" % (ctx.cudatool, trace), "baselines": jq}]


def trace_cases(ctx, work):
    loop, dev = sibling("trace").trace_loop(ctx, work)
    load = [loop, os.path.join(dev, "nvidiactl"), "5000", "0"]
    common = ["-q", "-o", os.path.join(work, "t.jsonl"), "--devices", dev + "/*"]
    strace = ["strace", "-f", "-o", os.path.join(work, "s.txt")]
    return [{"name": "trace --no-stacks, 5000 ioctls", "file": "trace_loop", "runs": 10,
             "cudatool": [ctx.cudatool, "trace", "--no-stacks"] + common + ["--"] + load,
             "baselines": {"strace -f --seccomp-bpf -e trace=ioctl":
                           strace + ["--seccomp-bpf", "-e", "trace=ioctl"] + load}},
            {"name": "trace (with stacks), 5000 ioctls", "file": "trace_loop", "runs": 10,
             "cudatool": [ctx.cudatool, "trace"] + common + ["--"] + load,
             "baselines": {"strace -f -k -e trace=ioctl": strace + ["-k", "-e", "trace=ioctl"] + load}}]


def index_cases(ctx, work, p580):
    if not p580:
        return []
    db = os.path.join(work, "580.sqlite")
    return [{"name": "index (whole index → SQLite)", "file": "580.159.04", "shell": True,
             "runs": 3, "warmup": 1, "all_cpus": True,
             "cudatool": "rm -f %s && %s index %s -o %s > /dev/null" % (db, ctx.cudatool, p580, db),
             "baselines": {"objdump -d --no-show-raw-insn":
                           "objdump -d --no-show-raw-insn %s > /dev/null" % p580}}]


def cases(ctx):
    work = tempfile.mkdtemp(prefix="cudatool-bench-goals-")
    p580 = sibling("xrefs").shared_580(ctx)
    return (function_cases(ctx, p580) + decode_cases(ctx, work) + trace_cases(ctx, work) +
            index_cases(ctx, work, p580))
