#!/usr/bin/python3
"""Events per second per core of `decode`, `decode --json`, `stats` and `export` on a synthetic
trace of N events (default 1,000,000) modelled on the real capture (bench/gen_trace.py).

    python3 bench/decode_speed.py [--events N] [--runs R] [--uvm-full]

Per core = events / CPU time (user + system of the process, from wait4's rusage), the best of R
runs (the machine is shared: the best run is the least disturbed). Output to /dev/null.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_of(argv):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("decode_speed: %s failed (status %d)" % (" ".join(argv), status))
    return ru.ru_utime + ru.ru_stime, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--uvm-full", action="store_true")
    a = ap.parse_args()
    for d in ("build-bench", "build"):
        b = os.path.join(ROOT, d, "cudatool")
        if os.path.exists(b):
            break
    # The real captures ship in tests/data/captures ($CUDATOOL_CAPTURES overrides).
    data = os.environ.get("CUDATOOL_CAPTURES") or os.path.join(ROOT, "tests", "data", "captures")
    if not os.path.exists(os.path.join(data, "trace_a.jsonl.xz")):
        sys.exit("decode_speed: the real captures are needed (tests/data/captures or $CUDATOOL_CAPTURES)")
    work = tempfile.mkdtemp(prefix="cudatool-speed-")
    template = os.path.join(work, "a.jsonl")
    subprocess.run([b, "import", os.path.join(data, "trace_a.jsonl.xz"), "-o", template,
                    "--driver-version", "580.159.04"], check=True, stdout=subprocess.DEVNULL)
    trace = os.path.join(work, "synth.jsonl")
    gen = [sys.executable, os.path.join(ROOT, "bench", "gen_trace.py"), template, trace,
           "--events", str(a.events)] + (["--uvm-full"] if a.uvm_full else [])
    subprocess.run(gen, check=True)
    size = os.path.getsize(trace)
    print("%s: %d events, %.0f MB (%.0f bytes per event)%s" % (
        b, a.events, size / 1e6, size / a.events, ", UVM arguments at full size" if a.uvm_full else ""))
    print("| command | best CPU s | events / s / core | MB / s | wall s (same run) |")
    print("|---|---:|---:|---:|---:|")
    for label, argv in (("decode", [b, "decode", trace]),
                        ("decode --json", [b, "decode", "--json", trace]),
                        ("stats", [b, "stats", trace]),
                        ("export --format perfetto", [b, "export", trace, "-o", os.devnull])):
        best = None
        for _ in range(a.runs):
            cpu, wall = cpu_of(argv)
            if best is None or cpu < best[0]:
                best = (cpu, wall)
        print("| %s | %.3f | %.2f M | %.0f | %.3f |" % (label, best[0], a.events / best[0] / 1e6,
                                                        size / best[0] / 1e6, best[1]))
    os.unlink(trace)
    os.unlink(template)
    os.rmdir(work)


if __name__ == "__main__":
    main()
