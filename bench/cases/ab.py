"""Issue #7: `cudatool ab` against what a user would do without it — strip the times with jq and
diff the two traces. The naive diff is not only slower: it reports thousands of differences
between two runs of the same program (every handle, pointer and fd), which is the point of the
normalisation; `ab` says "equivalent", or names the one changed call.

Large traces come from bench/ab_gen (build-bench): the real capture's 753 events repeated to
100,000 with fresh handles and pointers per repetition, one file per "run" (--run K).

Issue #15: `ab --html` (the self-contained page) against the same `ab` without it, for the
capture's 753 events against a run whose control #44 failed, and for the 100k pair; and a run
that stops half-way (--stop), the early end the verdict reports as one finding.
"""
import os
import subprocess
import tempfile


def find_gen(ctx):
    for d in ("build-bench", "build"):
        p = os.path.join(ctx.root, d, "bench", "ab_gen")
        if os.path.exists(p):
            return p
    return None


def find_capture(ctx, name):
    """The real captures ship in tests/data/captures ($CUDATOOL_CAPTURES overrides)."""
    d = os.environ.get("CUDATOOL_CAPTURES") or os.path.join(ctx.root, "tests", "data", "captures")
    p = os.path.join(d, name)
    return p if os.path.exists(p) else None


def naive(a, b, work):
    """jq drops what obviously varies (times, seq), diff compares the rest."""
    x, y = os.path.join(work, "x.jsonl"), os.path.join(work, "y.jsonl")
    strip = "jq -c 'del(.t, .dur, .seq)'"
    return "%s %s > %s; %s %s > %s; diff %s %s > /dev/null; true" % (strip, a, x, strip, b, y, x, y)


def cases(ctx):
    gen = find_gen(ctx)
    cap_a, cap_b = find_capture(ctx, "trace_a.jsonl.xz"), find_capture(ctx, "trace_b.jsonl.xz")
    if gen is None or cap_a is None or cap_b is None:
        print("bench ab: needs build-bench/bench/ab_gen (cmake --preset bench) and tests/data/captures")
        return []
    work = tempfile.mkdtemp(prefix="cudatool-bench-ab-")
    a, b = os.path.join(work, "a.trace"), os.path.join(work, "b.trace")
    for cap, out in ((cap_a, a), (cap_b, b)):
        subprocess.run([ctx.cudatool, "import", cap, "-o", out, "--driver-version", "580.159.04"],
                       check=True, stdout=subprocess.DEVNULL)
    big = {}
    for name, extra in (("run0", ["--run", "0"]), ("run1", ["--run", "1"]),
                        ("run1-status", ["--run", "1", "--mutate-status", "50000"]),
                        ("run1-stop", ["--run", "1", "--mutate-status", "50000", "--stop", "50100"])):
        big[name] = os.path.join(work, name + ".trace")
        subprocess.run([gen, a, big[name], "--events", "100000"] + extra, check=True,
                       stderr=subprocess.DEVNULL)
    small_status = os.path.join(work, "b-status44.trace")
    subprocess.run([gen, b, small_status, "--events", "753", "--run", "1", "--mutate-status", "44"],
                   check=True, stderr=subprocess.DEVNULL)
    page = os.path.join(work, "page.html")
    for label, x, y in (("753-event pair", a, small_status), ("100k pair", big["run0"], big["run1-status"])):
        subprocess.run([ctx.cudatool, "ab", x, y, "--html", page], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        print("bench ab --html: %s: page of %d bytes" % (label, os.path.getsize(page)))
    # How many lines the naive diff reports (printed once, for docs/PERFORMANCE.md).
    for label, x, y in (("captures", a, b), ("100k equivalent", big["run0"], big["run1"]),
                        ("100k one status", big["run0"], big["run1-status"])):
        r = subprocess.run("jq -c 'del(.t, .dur, .seq)' %s > %s/x; jq -c 'del(.t, .dur, .seq)' %s > %s/y; "
                           "diff %s/x %s/y | grep -c '^[<>]'" % (x, work, y, work, work, work),
                           shell=True, capture_output=True, text=True)
        s = subprocess.run([ctx.cudatool, "ab", x, y, "--json"], capture_output=True, text=True)
        import json
        d = json.loads(s.stdout)
        print("bench ab: %s: jq+diff reports %s differing lines; ab: equivalent=%s, %d divergences"
              % (label, r.stdout.strip(), d["equivalent"], sum(d["counts"].values())))
    ok_or_divergent = "; test $? -le 1"
    return [{
        "name": "ab: two runs of one program (753 events)", "file": "trace_a/trace_b", "shell": True,
        "cudatool": "%s ab %s %s > /dev/null" % (ctx.cudatool, a, b),
        "baselines": {"jq del(.t,.dur,.seq) + diff": naive(a, b, work)},
    }, {
        "name": "ab: 100k vs 100k events, equivalent", "file": "ab_gen --run 0/1", "shell": True,
        "runs": 5, "warmup": 1,
        "cudatool": "%s ab %s %s > /dev/null" % (ctx.cudatool, big["run0"], big["run1"]),
        "baselines": {"jq del(.t,.dur,.seq) + diff": naive(big["run0"], big["run1"], work)},
    }, {
        "name": "ab: 100k vs 100k events, one status changed", "file": "ab_gen --mutate-status",
        "shell": True, "runs": 5, "warmup": 1,
        "cudatool": "%s ab %s %s > /dev/null%s" % (ctx.cudatool, big["run0"], big["run1-status"], ok_or_divergent),
        "baselines": {"jq del(.t,.dur,.seq) + diff": naive(big["run0"], big["run1-status"], work)},
    }, {
        "name": "ab: 100k vs a run that fails at 50,000 and stops", "file": "ab_gen --stop", "shell": True,
        "runs": 5, "warmup": 1,
        "cudatool": "%s ab %s %s > /dev/null%s" % (ctx.cudatool, big["run0"], big["run1-stop"], ok_or_divergent),
        "baselines": {"jq del(.t,.dur,.seq) + diff": naive(big["run0"], big["run1-stop"], work)},
    }, {
        "name": "ab --html: 753 events vs a run whose #44 failed", "file": "trace_a / ab_gen --mutate-status 44",
        "shell": True, "runs": 20,
        "cudatool": "%s ab %s %s --html %s > /dev/null 2>&1%s" % (ctx.cudatool, a, small_status, page, ok_or_divergent),
        "baselines": {"ab without --html": "%s ab %s %s > /dev/null%s" % (ctx.cudatool, a, small_status, ok_or_divergent)},
    }, {
        "name": "ab --html: 100k vs 100k events, one status changed", "file": "ab_gen --mutate-status",
        "shell": True, "runs": 5, "warmup": 1,
        "cudatool": "%s ab %s %s --html %s > /dev/null 2>&1%s" % (ctx.cudatool, big["run0"], big["run1-status"], page, ok_or_divergent),
        "baselines": {"ab without --html": "%s ab %s %s > /dev/null%s" % (ctx.cudatool, big["run0"], big["run1-status"], ok_or_divergent)},
    }]
