#!/usr/bin/python3
"""Generates src/replay/generated/gpu_methods.h, the method layouts of the replay's fake GPU
(src/replay/shim/fake_gpu.c), from NVIDIA's open-gpu-kernel-modules class headers.

    tools/gpu_methods/gen_gpu_methods.py --git-dir DIR [--rev 580.142] [--out FILE] [--check]

--git-dir is a clone or bare mirror with the release tags (read with `git show REV:PATH`). Only
names and numbers are written: method offsets, bit ranges and values of the defines listed in
WANTED, and the offsets of GPGet/GPPut in the channel's USERD (counted from the NvU32 members of
the header's control structure). --check fails when FILE differs from what would be written.
Standard library only (Debian's /usr/bin/python3).
"""

import argparse
import re
import subprocess
import sys

CLASS = "src/common/sdk/nvidia/inc/class/"
UVM = "kernel-open/nvidia-uvm/"

# (header, define) pairs: the host channel (Hopper GPFIFO), the pushbuffer method header (Fermi
# format, unchanged since), the copy engine (Hopper DMA copy, UVM's full copy of the header) and
# the compute class. Hopper's own compute header (clcbc0.h) holds only the class id; the methods
# used here have the same offsets in every compute class since Volta, so Ampere's clc6c0.h gives
# them.
WANTED = [
    (CLASS + "clc86f.h", [
        "NVC86F_SET_OBJECT", "NVC86F_SEM_ADDR_LO", "NVC86F_SEM_ADDR_LO_OFFSET",
        "NVC86F_SEM_ADDR_HI", "NVC86F_SEM_ADDR_HI_OFFSET", "NVC86F_SEM_PAYLOAD_LO",
        "NVC86F_SEM_PAYLOAD_HI", "NVC86F_SEM_EXECUTE", "NVC86F_SEM_EXECUTE_OPERATION",
        "NVC86F_SEM_EXECUTE_OPERATION_ACQUIRE", "NVC86F_SEM_EXECUTE_OPERATION_RELEASE",
        "NVC86F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ", "NVC86F_SEM_EXECUTE_PAYLOAD_SIZE",
        "NVC86F_SEM_EXECUTE_RELEASE_TIMESTAMP", "NVC86F_SEM_EXECUTE_RELEASE_TIMESTAMP_EN",
        "NVC86F_GP_ENTRY__SIZE", "NVC86F_GP_ENTRY0_GET", "NVC86F_GP_ENTRY1_GET_HI",
        "NVC86F_GP_ENTRY1_LENGTH",
    ]),
    # Hopper's header in the open tree lists a subset of the semaphore operations; the Ampere host
    # class (same method offsets, checked below) lists them all.
    (CLASS + "clc56f.h", [
        "NVC56F_SEM_EXECUTE", "NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ",
        "NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND", "NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR",
        "NVC56F_SEM_EXECUTE_OPERATION_REDUCTION", "NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT",
        "NVC56F_SEM_EXECUTE_REDUCTION", "NVC56F_SEM_EXECUTE_REDUCTION_IADD",
        "NVC56F_SEM_EXECUTE_REDUCTION_INC",
    ]),
    (CLASS + "cl906f.h", [
        "NV906F_DMA_METHOD_ADDRESS", "NV906F_DMA_METHOD_SUBCHANNEL", "NV906F_DMA_METHOD_COUNT",
        "NV906F_DMA_TERT_OP", "NV906F_DMA_SEC_OP", "NV906F_DMA_SEC_OP_GRP0_USE_TERT",
        "NV906F_DMA_SEC_OP_INC_METHOD", "NV906F_DMA_SEC_OP_GRP2_USE_TERT",
        "NV906F_DMA_SEC_OP_NON_INC_METHOD", "NV906F_DMA_SEC_OP_IMMD_DATA_METHOD",
        "NV906F_DMA_SEC_OP_ONE_INC", "NV906F_DMA_SEC_OP_END_PB_SEGMENT",
        "NV906F_DMA_TERT_OP_GRP0_INC_METHOD", "NV906F_DMA_TERT_OP_GRP2_NON_INC_METHOD",
    ]),
    (UVM + "clc8b5.h", [
        "NVC8B5_SET_SEMAPHORE_A", "NVC8B5_SET_SEMAPHORE_B", "NVC8B5_SET_SEMAPHORE_PAYLOAD",
        "NVC8B5_LAUNCH_DMA", "NVC8B5_LAUNCH_DMA_DATA_TRANSFER_TYPE",
        "NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE",
        "NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE",
        "NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_SEMAPHORE_WITH_TIMESTAMP",
        "NVC8B5_LAUNCH_DMA_MULTI_LINE_ENABLE", "NVC8B5_LAUNCH_DMA_REMAP_ENABLE",
        "NVC8B5_LAUNCH_DMA_SRC_TYPE", "NVC8B5_LAUNCH_DMA_DST_TYPE",
        "NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION", "NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_INC",
        "NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE", "NVC8B5_LAUNCH_DMA_SEMAPHORE_PAYLOAD_SIZE",
        "NVC8B5_OFFSET_IN_UPPER", "NVC8B5_OFFSET_IN_LOWER", "NVC8B5_OFFSET_OUT_UPPER",
        "NVC8B5_OFFSET_OUT_LOWER", "NVC8B5_LINE_LENGTH_IN", "NVC8B5_SET_REMAP_CONST_A",
        "NVC8B5_SET_REMAP_CONST_B", "NVC8B5_SET_REMAP_COMPONENTS",
        "NVC8B5_SET_REMAP_COMPONENTS_DST_X", "NVC8B5_SET_REMAP_COMPONENTS_DST_X_CONST_A",
        "NVC8B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE",
        "NVC8B5_SET_REMAP_COMPONENTS_NUM_DST_COMPONENTS",
    ]),
    # The Ampere copy engine (same method offsets as Hopper's, checked below) for what the Hopper
    # header in the open tree leaves out.
    (UVM + "clc6b5.h", [
        "NVC6B5_LAUNCH_DMA", "NVC6B5_PITCH_IN", "NVC6B5_PITCH_OUT", "NVC6B5_LINE_COUNT",
        "NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE",
        "NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_IADD",
    ]),
    (CLASS + "clc6c0.h", [
        "NVC6C0_SET_OBJECT", "NVC6C0_SEND_PCAS_A", "NVC6C0_SEND_SIGNALING_PCAS_B",
        "NVC6C0_SEND_SIGNALING_PCAS2_B", "NVC6C0_SET_REPORT_SEMAPHORE_A",
        "NVC6C0_SET_REPORT_SEMAPHORE_B", "NVC6C0_SET_REPORT_SEMAPHORE_C",
        "NVC6C0_SET_REPORT_SEMAPHORE_D", "NVC6C0_SET_REPORT_SEMAPHORE_D_OPERATION",
        "NVC6C0_SET_REPORT_SEMAPHORE_D_OPERATION_RELEASE",
        "NVC6C0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE",
        "NVC6C0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_ONE_WORD",
    ]),
]

# Methods the substitutions above rely on being at the same offset in both classes.
SAME = [("NVC86F_SEM_EXECUTE", "NVC56F_SEM_EXECUTE"), ("NVC8B5_LAUNCH_DMA", "NVC6B5_LAUNCH_DMA")]

DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s+\(?\s*(0x[0-9A-Fa-f]+|\d+)\s*\)?\s*(?://.*|/\*.*)?$")
RANGE = re.compile(r"^\s*#\s*define\s+(\w+)\s+(\d+):(\d+)\s*(?://.*|/\*.*)?$")


def show(git_dir, rev, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def userd_offsets(text):
    """Byte offsets of GPGet and GPPut in Nvc86fControl_struct (NvU32 members, arrays by count)."""
    body = text[text.index("Nvc86fControl_struct"):]
    body = body[body.index("{") + 1:body.index("}")]
    off, found = 0, {}
    for m in re.finditer(r"NvU32\s+(\w+)(?:\[(0x[0-9A-Fa-f]+|\d+)\])?\s*;", body):
        found[m.group(1)] = off
        off += 4 * (int(m.group(2), 0) if m.group(2) else 1)
    return found["GPGet"], found["GPPut"]


def generate(git_dir, rev):
    lines = [
        "// generated by tools/gpu_methods/gen_gpu_methods.py from NVIDIA/open-gpu-kernel-modules",
        f"// {rev}; do not edit",
        "/* The method layouts the replay's fake GPU reads (src/replay/shim/fake_gpu.c): the host",
        " * channel's semaphore methods and GPFIFO entry, the pushbuffer method header, the copy",
        " * engine's semaphore and copy methods, the compute class's launch and report-semaphore",
        " * methods. RPG_<define> is the header's value; a bit range hi:lo is RPG_<define>_HI/_LO. */",
        "#ifndef CUDATOOL_REPLAY_GENERATED_GPU_METHODS_H",
        "#define CUDATOOL_REPLAY_GENERATED_GPU_METHODS_H",
        "",
        "/* clang-format off */",
    ]
    seen = {}
    for header, names in WANTED:
        text = show(git_dir, rev, header)
        values, ranges = {}, {}
        for line in text.splitlines():
            m = RANGE.match(line)
            if m:
                ranges[m.group(1)] = (int(m.group(2)), int(m.group(3)))
                continue
            m = DEFINE.match(line)
            if m:
                values[m.group(1)] = int(m.group(2), 0)
        lines.append(f"/* {header} */")
        for n in names:
            if n in ranges:
                hi, lo = ranges[n]
                lines.append(f"#define RPG_{n}_HI {hi}")
                lines.append(f"#define RPG_{n}_LO {lo}")
            elif n in values:
                lines.append(f"#define RPG_{n} 0x{values[n]:x}")
                seen[n] = values[n]
            else:
                sys.exit(f"gen_gpu_methods: {header} at {rev} has no define {n}")
        if header.endswith("clc86f.h"):
            get, put = userd_offsets(text)
            lines.append("/* Nvc86fControl_struct (USERD): byte offsets of GPGet and GPPut */")
            lines.append(f"#define RPG_NVC86F_USERD_GP_GET 0x{get:x}")
            lines.append(f"#define RPG_NVC86F_USERD_GP_PUT 0x{put:x}")
    for a, b in SAME:
        if seen.get(a) != seen.get(b):
            sys.exit(f"gen_gpu_methods: {a} and {b} differ at {rev}")
    lines += ["/* clang-format on */", "", "#endif /* CUDATOOL_REPLAY_GENERATED_GPU_METHODS_H */", ""]
    return "\n".join(lines)


def run(doc, name, generate_text, rev, out):
    """The command line of a generator of this folder: --git-dir, --rev, --out, --check;
    generate_text(git_dir, rev) gives the file's text."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--rev", default=rev)
    ap.add_argument("--out", default=out)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    text = generate_text(a.git_dir, a.rev)
    if a.check:
        with open(a.out) as f:
            if f.read() != text:
                sys.exit(f"{name}: {a.out} differs from what {a.rev} gives")
        return
    with open(a.out, "w") as f:
        f.write(text)


def main():
    run(__doc__, "gen_gpu_methods", generate, "580.142", "src/replay/generated/gpu_methods.h")


if __name__ == "__main__":
    main()
