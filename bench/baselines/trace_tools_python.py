#!/usr/bin/python3
"""Baseline for bench/cases/decode.py: what a user would write in Python over a cudatool trace
(JSON lines) with the committed tables, for each of `decode`, `stats` and `export`. It does less
than cudatool: decode names the escape / UVM call, the control command, class and status of the
RM headers only (no parameter structures); stats counts by device, call, control, class and
failed status (no object tree, no milestones); export writes one trace-event slice per event.

    trace_tools_python.py decode|stats|perfetto GENERATED_BRANCH_DIR TRACE.jsonl
"""
import collections
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rm_decode_python import name, tables  # noqa: E402


def main():
    mode, d, trace = sys.argv[1], sys.argv[2], sys.argv[3]
    esc, ctrl, cls, st, uvm = tables(d)

    def call_of(e):
        """(call, ctrl, class, status) of one event."""
        if e["sys"] != "ioctl":
            return e["sys"], None, None, None
        req = int(e["req"], 16)
        arg = bytes.fromhex(e.get("arg", {}).get("post", ""))
        if e.get("path", "").endswith("nvidia-uvm"):
            u = uvm.get(req)
            if not u:
                return "ioctl 0x%x?" % req, None, None, None
            off = int(u[1].split(",")[-1])
            s = struct.unpack_from("<I", arg, off)[0] if 0 <= off <= len(arg) - 4 else None
            return u[0], None, None, s
        nr = req & 0xff
        if nr == 0x2a and len(arg) >= 32:
            return name(esc, nr), struct.unpack_from("<I", arg, 8)[0], None, \
                struct.unpack_from("<I", arg, 28)[0]
        if nr == 0x2b and len(arg) >= 32:
            return name(esc, nr), None, struct.unpack_from("<I", arg, 12)[0], \
                struct.unpack_from("<I", arg, 28 if len(arg) == 32 else 40)[0]
        if nr == 0x29 and len(arg) >= 16:
            return name(esc, nr), None, None, struct.unpack_from("<I", arg, 12)[0]
        return name(esc, nr), None, None, None

    out = sys.stdout
    counts = collections.defaultdict(collections.Counter)
    first = True
    if mode == "perfetto":
        out.write('{"traceEvents":[')
    with open(trace) as f:
        next(f)  # header
        for line in f:
            e = json.loads(line)
            if "seq" not in e:
                continue
            call, c, k, s = call_of(e)
            if mode == "decode":
                text = call
                if c is not None:
                    text += " cmd=" + name(ctrl, c)
                if k is not None:
                    text += " hClass=" + name(cls, k)
                if s is not None:
                    text += " status=" + name(st, s)
                out.write("%d %d %s\n" % (e["seq"], e["tid"], text))
            elif mode == "stats":
                counts["device"][e.get("path")] += 1
                counts["call"][call] += 1
                if c is not None:
                    counts["control"][name(ctrl, c)] += 1
                if k is not None:
                    counts["class"][name(cls, k)] += 1
                if s:
                    counts["failed"][name(st, s)] += 1
            else:
                label = call + (" " + name(ctrl, c) if c is not None else "") + \
                    (" " + name(cls, k) if k is not None else "")
                out.write(("" if first else ",") + json.dumps(
                    {"ph": "X", "name": label, "ts": e["t"] / 1000, "dur": e.get("dur", 0) / 1000,
                     "pid": e["pid"], "tid": e["tid"], "args": {"seq": e["seq"]}}))
                first = False
    if mode == "stats":
        for k, c in counts.items():
            out.write("%s\n" % k)
            for n, v in c.most_common():
                out.write("  %8d %s\n" % (v, n))
    elif mode == "perfetto":
        out.write("]}\n")


if __name__ == "__main__":
    main()
