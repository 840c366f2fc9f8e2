#!/usr/bin/python3
"""Writes a synthetic trace of N events modelled on a real one, for the decode/stats/export
benchmarks (docs/PERFORMANCE.md).

    gen_trace.py TEMPLATE.jsonl OUT.jsonl [--events N] [--threads T] [--uvm-full]

TEMPLATE is a cudatool trace (e.g. `cudatool import tests/data/captures/trace_a.jsonl.xz -o a.jsonl
--driver-version 580.159.04`). Its events are repeated in order until N are written, so the mix
of calls, argument sizes and handles is the capture's (the RM object tree is rebuilt and torn
down once per pass). Each copy gets a fresh seq, an entry time that grows by the template's
gaps, a duration (2-40 µs, fixed pseudo-random sequence), pid 4242 and one of T thread ids,
like a ptrace recording (the capture itself has no durations or pids).

--uvm-full: UVM arguments are padded to the parameter size of the r580 table (the capture read
256-byte prefixes; `cudatool trace` now reads whole UVM_*_PARAMS, e.g. 9264 bytes for
UVM_MAP_EXTERNAL_ALLOCATION): the heavy case for the reader's hex decoding.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UVM_INC = os.path.join(HERE, "..", "src", "rm", "generated", "r580", "uvm.inc")


def uvm_sizes():
    sizes = {}
    with open(UVM_INC) as f:
        for line in f:
            m = re.match(r'^\{(0x[0-9a-f]+), "\w+", "\w*", (-?\d+), ', line)
            if m and int(m.group(2)) > 0:
                sizes[int(m.group(1), 16)] = int(m.group(2))
    return sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--uvm-full", action="store_true")
    args = ap.parse_args()

    with open(args.template) as f:
        lines = f.read().splitlines()
    header = json.loads(lines[0])
    if "cudatool_trace" not in header:
        sys.exit("gen_trace: %s is not a cudatool trace (import a capture first)" % args.template)
    sizes = uvm_sizes() if args.uvm_full else {}
    # Each template event as (gap to the previous one in ns, the line after its "tid" member).
    events, prev_t = [], None
    for line in lines[1:]:
        j = json.loads(line)
        if "seq" not in j:
            continue  # the trailer
        if sizes and j.get("sys") == "ioctl" and "uvm" in j.get("path", ""):
            n = sizes.get(int(j["req"], 16))
            a = j["arg"]
            if n and len(a.get("pre", "")) < 2 * n:
                for side in ("pre", "post"):
                    if side in a:
                        a[side] = (a[side] + "00" * n)[:2 * n]
                a["size"] = n
                a.pop("bounded", None)
        for k in ("seq", "t", "dur", "pid", "tid"):
            j.pop(k, None)
        rest = json.dumps(j, separators=(",", ":"))[1:]  # without the opening brace
        gap = 0 if prev_t is None else max(0, json.loads(line)["t"] - prev_t)
        prev_t = json.loads(line)["t"]
        events.append((gap, rest))
    header["argv"] = ["bench/gen_trace.py", os.path.basename(args.template)]
    header["mode"] = "ptrace"
    out = open(args.out, "w")
    out.write(json.dumps(header, separators=(",", ":")) + "\n")
    t, x = 1000000, 12345
    chunk = []
    for seq in range(args.events):
        gap, rest = events[seq % len(events)]
        x = (x * 1103515245 + 12345) & 0x7fffffff
        dur = 2000 + x % 38000
        t += gap + dur
        tid = 4242 + (seq // 97) % args.threads
        chunk.append('{"seq":%d,"t":%d,"dur":%d,"pid":4242,"tid":%d,%s\n' % (seq, t, dur, tid, rest))
        if len(chunk) == 4096:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
    out.write('{"end":{"events":%d,"reason":"exit","exit_status":0}}\n' % args.events)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
