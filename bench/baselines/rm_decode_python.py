#!/usr/bin/python3
"""Baseline for bench/cases/rm_decode.py: what a user would write in Python with the committed
tables: decompress a capture, parse each JSON line, name the escape / UVM call, and for RM
control, alloc and free unpack the NVOS54/NVOS21/NVOS64/NVOS00 header and name the control
command, class and status (no parameter structures: less than cudatool decodes).

    rm_decode_python.py GENERATED_BRANCH_DIR CAPTURE.jsonl.xz
"""
import json
import lzma
import re
import struct
import sys

ENTRY = re.compile(r'^\{(0x[0-9a-f]+), "([^"]*)"(.*)\},$')


def table(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = ENTRY.match(line)
            if m:
                out[int(m.group(1), 16)] = (m.group(2), m.group(3))
    return out


def tables(d):
    """The five committed tables of one branch directory: escapes, controls, classes, statuses,
    UVM calls (value -> (name, rest of the entry))."""
    return [table(d + "/" + n + ".inc") for n in ("escapes", "ctrl", "classes", "status", "uvm")]


def name(t, v):
    e = t.get(v)
    return e[0] if e else "0x%x?" % v


def main():
    d, capture = sys.argv[1], sys.argv[2]
    esc, ctrl, cls, st, uvm = tables(d)

    out = []
    with lzma.open(capture, "rt") as f:
        for line in f:
            e = json.loads(line)
            if e["sys"] != "ioctl":
                out.append(e["sys"])
                continue
            req = int(e["req"], 16)
            arg = bytes.fromhex(e.get("post", ""))
            if e["path"] == "/dev/nvidia-uvm":
                u = uvm.get(req)
                if not u:
                    out.append("ioctl 0x%x?" % req)
                    continue
                off = int(u[1].split(",")[-1])
                s = struct.unpack_from("<I", arg, off)[0] if 0 <= off <= len(arg) - 4 else 0
                out.append("%s rmStatus=%s" % (u[0], name(st, s)))
                continue
            nr = req & 0xff
            call = name(esc, nr)
            if nr == 0x2a:
                h, o, cmd, fl, p, ps, s = struct.unpack_from("<IIIIQII", arg)
                out.append("%s hClient=0x%08x hObject=0x%08x cmd=%s paramsSize=%d status=%s" %
                           (call, h, o, name(ctrl, cmd), ps, name(st, s)))
            elif nr == 0x2b:
                r, p, n, c = struct.unpack_from("<IIII", arg)
                s = struct.unpack_from("<I", arg, 24 if len(arg) == 32 else 40)[0]
                out.append("%s hRoot=0x%08x hObjectParent=0x%08x hObjectNew=0x%08x hClass=%s "
                           "status=%s" % (call, r, p, n, name(cls, c), name(st, s)))
            elif nr == 0x29:
                r, p, o, s = struct.unpack_from("<IIII", arg)
                out.append("%s hRoot=0x%08x hObjectParent=0x%08x hObjectOld=0x%08x status=%s" %
                           (call, r, p, o, name(st, s)))
            else:
                out.append(call)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
