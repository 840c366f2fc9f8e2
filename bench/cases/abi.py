"""Issue #34: the kernel-ABI surface. `abi LIB` (map, cross-reference sweep, a second sweep for
immediates, the branch's layouts) and `abi OLD NEW` from a fresh process, against what a user would
otherwise run: `objdump -d` of the build, grepped for the `mov $…` immediates that are request
words (the first step of doing it by hand; the tables' lookups would still be left). On 580.159.04
from ../shared/data (the 96 MB build) and the 535 → 580 pair. Goals: abi < 2 s, abi OLD NEW < 4 s."""
import importlib.util
import os

# The 580 build as the xrefs case finds and unpacks it (one way for every case).
_spec = importlib.util.spec_from_file_location(
    "xrefs_case", os.path.join(os.path.dirname(os.path.abspath(__file__)), "xrefs.py"))
_xrefs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_xrefs)
shared_580 = _xrefs.shared_580


def cases(ctx):
    out = []
    p580 = shared_580(ctx)
    if p580 is None:
        return out
    grep = ("objdump -d --no-show-raw-insn %s | grep -cE '\\$0x[0-9a-f]{4}46[0-9a-f]{2},' > /dev/null"
            % p580)
    out.append({
        "name": "abi LIB (fresh process)", "file": "580.159.04", "shell": True, "runs": 3,
        "warmup": 1,
        "cudatool": "%s abi %s > /dev/null" % (ctx.cudatool, p580),
        "baselines": {"objdump -d | grep request words": grep},
    })
    old = [p for v, p in ctx.drivers if v == "535.261.03"]
    if old:
        out.append({
            "name": "abi OLD NEW (fresh process)", "file": "535.261.03 → 580.159.04", "shell": True,
            "runs": 3, "warmup": 1,
            "cudatool": "%s abi %s %s > /dev/null" % (ctx.cudatool, old[0], p580),
            "baselines": {"objdump -d of both | grep request words":
                          grep + " && objdump -d --no-show-raw-insn %s | grep -cE "
                          "'\\$0x[0-9a-f]{4}46[0-9a-f]{2},' > /dev/null" % old[0]},
        })
    return out
