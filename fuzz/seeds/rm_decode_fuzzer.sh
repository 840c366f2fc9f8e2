#!/usr/bin/env bash
# Seeds: every ioctl of the real captures (tests/data/captures, or $CUDATOOL_CAPTURES) in the fuzzer's
# input layout (see fuzz/rm_decode_fuzzer.cpp), one file per distinct request and nested size.
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"  # root, data, bin
captures=$data
[[ -n "$captures" ]] || { echo "rm_decode_fuzzer seeds: no captures found" >&2; exit 0; }
xz -dc "$captures/trace_a.jsonl.xz" | /usr/bin/python3 -c '
import json, struct, sys
out = sys.argv[1]
paths = ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"]
seen = set()
for line in sys.stdin:
    e = json.loads(line)
    if e["sys"] != "ioctl":
        continue
    req = int(e["req"], 16)
    arg = bytes.fromhex(e.get("post", ""))
    nested = bytes.fromhex(e.get("npost", ""))
    key = (req, len(nested))
    if key in seen:
        continue
    seen.add(key)
    dev = paths.index(e["path"]) if e["path"] in paths else 1
    blob = struct.pack("<BBBQH", 3, dev, 0, req, len(arg)) + arg + nested
    with open("%s/capture-%08x-%d" % (out, req, len(nested)), "wb") as f:
        f.write(blob)
' "$out"
exit 0
