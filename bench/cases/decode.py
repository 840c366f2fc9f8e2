"""Issue #6: `decode`, `stats` and `export --format perfetto` on a synthetic trace of 100,000
events modelled on the real capture (bench/gen_trace.py: the capture's events repeated, with
durations and four threads). Baselines: the same jobs in Python with the committed tables
(bench/baselines/trace_tools_python.py, which decodes only the RM headers and builds no object
tree) and with jq. Events per second per core on 1,000,000 events come from
bench/decode_speed.py."""
import os
import subprocess
import tempfile


def captures(ctx):
    """The real captures ship in tests/data/captures ($CUDATOOL_CAPTURES overrides)."""
    d = os.environ.get("CUDATOOL_CAPTURES") or os.path.join(ctx.root, "tests", "data", "captures")
    return d if os.path.exists(os.path.join(d, "trace_a.jsonl.xz")) else None


def synthetic_trace(ctx, data, work, events):
    """A synthetic trace of `events` events in `work` (bench/gen_trace.py on the real capture)."""
    template = os.path.join(work, "a.jsonl")
    subprocess.run([ctx.cudatool, "import", os.path.join(data, "trace_a.jsonl.xz"), "-o", template,
                    "--driver-version", "580.159.04"], check=True, stdout=subprocess.DEVNULL)
    trace = os.path.join(work, "synth%dk.jsonl" % (events // 1000))
    subprocess.run([ctx.python, os.path.join(ctx.root, "bench", "gen_trace.py"), template, trace,
                    "--events", str(events)], check=True)
    return trace


def cases(ctx):
    data = captures(ctx)
    if data is None:
        return []
    work = tempfile.mkdtemp(prefix="cudatool-bench-decode-")
    trace = synthetic_trace(ctx, data, work, 100000)
    py = [ctx.python, os.path.join(ctx.root, "bench", "baselines", "trace_tools_python.py")]
    tables = os.path.join(ctx.root, "src", "rm", "generated", "r580")
    out = os.path.join(work, "out")
    return [{
        "name": "decode (text), 100k events", "file": "synthetic", "shell": True, "runs": 5,
        "cudatool": "%s decode %s > /dev/null" % (ctx.cudatool, trace),
        "baselines": {
            "python + tables (RM headers only)": " ".join(py + ["decode", tables, trace]) + " > /dev/null",
            "jq -c . (parse and print only)": "jq -c . %s > /dev/null" % trace,
        },
    }, {
        "name": "decode --json, 100k events", "file": "synthetic", "shell": True, "runs": 5,
        "cudatool": "%s decode --json %s > /dev/null" % (ctx.cudatool, trace),
        "baselines": {
            "jq -c . (parse and print only)": "jq -c . %s > /dev/null" % trace,
        },
    }, {
        "name": "stats, 100k events", "file": "synthetic", "shell": True, "runs": 5,
        "cudatool": "%s stats %s > /dev/null" % (ctx.cudatool, trace),
        "baselines": {
            "python + tables (counts only)": " ".join(py + ["stats", tables, trace]) + " > /dev/null",
            "jq (count by path and sys) | sort | uniq -c":
                "jq -r '[.path, .sys] | @tsv' %s | sort | uniq -c > /dev/null" % trace,
        },
    }, {
        "name": "export --format perfetto, 100k events", "file": "synthetic", "shell": True, "runs": 5,
        "cudatool": "%s export %s -o %s.json" % (ctx.cudatool, trace, out),
        "baselines": {
            "python + tables": " ".join(py + ["perfetto", tables, trace]) + " > %s.py.json" % out,
            "jq (slices without names) | jq -s": (
                "jq -c 'select(.seq) | {ph:\"X\", name:.sys, ts:(.t/1000), dur:((.dur//0)/1000), "
                "pid, tid}' %s | jq -s -c '{traceEvents:.}' > %s.jq.json" % (trace, out)),
        },
    }]
