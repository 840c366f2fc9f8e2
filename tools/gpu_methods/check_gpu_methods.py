#!/usr/bin/python3
"""Checks the committed src/replay/generated/gpu_methods.h against a second, independent source
of the same facts: the class headers Debian's nvidia-open-kernel-source packages ship in
nvidia-uvm/ (UVM's copies of clc86f.h, clc56f.h, clc6b5.h, clc8b5.h; fetched by
tools/fetch-kernel-source.sh), where the generator read NVIDIA/open-gpu-kernel-modules' git tree.

    tools/gpu_methods/check_gpu_methods.py GENERATED_H [KERNEL_SOURCE_DIR]

KERNEL_SOURCE_DIR defaults to $CUDATOOL_KERNEL_SOURCE or ~/.cache/cudatool/kernel-source (one
folder per driver version). Every RPG_<define> whose header is there is compared with each
version's value (a bit range hi:lo with RPG_<define>_HI/_LO); a method layout changes between
branches never in these classes, so every version must agree. Exit 0: all agree (and at least
40 compared); 1: a difference (listed); 77: no headers to compare with (ctest: skipped).
Standard library only.
"""

import os
import re
import sys

DEFINE = re.compile(r"^#define\s+(NV[0-9A-F]{4}[A-Z0-9_]*)\s+(\S+)\s*(?:/\*.*)?$")
RPG = re.compile(r"^#define RPG_(\w+) (\S+)$")


def header_values(path):
    out = {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            m = DEFINE.match(line.strip())
            if not m:
                continue
            name, value = m.groups()
            value = value.strip("()")
            r = re.fullmatch(r"(\d+):(\d+)", value)
            if r:
                out[name + "_HI"] = int(r.group(1))
                out[name + "_LO"] = int(r.group(2))
                continue
            try:
                out[name] = int(value, 0)
            except ValueError:
                pass
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    generated = sys.argv[1]
    root = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
        "CUDATOOL_KERNEL_SOURCE", os.path.expanduser("~/.cache/cudatool/kernel-source"))
    ours = {}
    with open(generated, encoding="utf-8") as f:
        for line in f:
            m = RPG.match(line.strip())
            if m:
                ours[m.group(1)] = int(m.group(2), 0)
    if not ours:
        print(f"check_gpu_methods: no RPG_ defines in {generated}", file=sys.stderr)
        return 1
    versions = sorted(d for d in os.listdir(root)) if os.path.isdir(root) else []
    compared, bad = 0, []
    for v in versions:
        uvm = os.path.join(root, v, "nvidia-uvm")
        if not os.path.isdir(uvm):
            continue
        theirs = {}
        for name in os.listdir(uvm):
            if re.fullmatch(r"cl[0-9a-f]{4}\.h", name):
                theirs.update(header_values(os.path.join(uvm, name)))
        for name, value in sorted(ours.items()):
            if name not in theirs:
                continue
            compared += 1
            if theirs[name] != value:
                bad.append(f"{v}: {name} is {theirs[name]:#x} there, {value:#x} in {generated}")
    if compared == 0:
        print(f"check_gpu_methods: SKIPPED: no class headers under {root}/*/nvidia-uvm "
              "(tools/fetch-kernel-source.sh fetches them)")
        return 77
    for b in bad:
        print("check_gpu_methods: " + b, file=sys.stderr)
    print(f"check_gpu_methods: {compared} values compared across {len(versions)} driver "
          f"versions ({len(ours)} generated defines), {len(bad)} differ")
    if compared < 40:
        print("check_gpu_methods: fewer than 40 values compared: the headers are not what they "
              "were", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
