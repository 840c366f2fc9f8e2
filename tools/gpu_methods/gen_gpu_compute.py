#!/usr/bin/python3
"""Generates src/replay/generated/gpu_compute.h, the compute-class methods and the QMD (Queue
Meta Data: what a compute launch is) layouts that the replay's fake GPU reads
(src/replay/shim/launch.c), from NVIDIA's open-gpu-doc class headers.

    tools/gpu_methods/gen_gpu_compute.py --git-dir DIR [--rev REV] [--out FILE] [--check]

--git-dir is a clone or bare mirror of github.com/NVIDIA/open-gpu-doc (read with `git show
REV:PATH`); the kernel-module tree that gen_gpu_methods.py reads holds only the class id of
Hopper's compute class and no QMD layout newer than Kepler's. Only names and numbers are written:
method offsets, bit ranges and values of the defines listed below. A bit range of the QMD headers
is MW(hi:lo) (bit numbers counted from the QMD's first byte); an indexed one MW((a+(i)*s):(b+(i)*s))
becomes RPG_<define>_HI(i) / _LO(i); an indexed method (a+(i)*s) RPG_<define>(i).

Written from Hopper's headers (clcbc0.h, clcbc0qmd.h: QMD versions 03_00 and 04_00); the same
defines of Ampere's and Ada's headers (clc6c0.h, clc6c0qmd.h, clc9c0.h, clc9c0qmd.h) are read too
and must agree wherever they exist, so that one layout serves the three compute classes (the
generator fails otherwise). --check fails when FILE differs from what would be written.
Standard library only (Debian's /usr/bin/python3).
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_gpu_methods  # noqa: E402  (its command line, its `git show`)
from gen_gpu_methods import show  # noqa: E402

DIR = "classes/compute/"
HOPPER, AMPERE, ADA = "cbc0", "c6c0", "c9c0"

# The semaphore reductions (one list of values in every form: checked by the C code).
REDUCTIONS = ["ADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR"]

# Methods of the compute class: inline-to-memory (I2M: the QMD, constant buffers and code reach
# GPU memory through it), the launch (SEND_PCAS_A gives the QMD address, SEND_SIGNALING_PCAS*_B
# what to do with it), the inline QMD, and both report-semaphore forms.
METHODS = [
    "SET_OBJECT", "LINE_LENGTH_IN", "LINE_COUNT", "OFFSET_OUT_UPPER", "OFFSET_OUT_UPPER_VALUE",
    "OFFSET_OUT", "PITCH_OUT", "LAUNCH_DMA", "LAUNCH_DMA_DST_MEMORY_LAYOUT",
    "LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH", "LAUNCH_DMA_COMPLETION_TYPE",
    "LAUNCH_DMA_COMPLETION_TYPE_RELEASE_SEMAPHORE", "LAUNCH_DMA_SEMAPHORE_STRUCT_SIZE",
    "LAUNCH_DMA_SEMAPHORE_STRUCT_SIZE_ONE_WORD", "LOAD_INLINE_DATA", "SET_I2M_SEMAPHORE_A",
    "SET_I2M_SEMAPHORE_A_OFFSET_UPPER", "SET_I2M_SEMAPHORE_B", "SET_I2M_SEMAPHORE_C",
    "SEND_PCAS_A", "SEND_PCAS_A_QMD_ADDRESS_SHIFTED8", "SEND_SIGNALING_PCAS_B",
    "SEND_SIGNALING_PCAS_B_INVALIDATE", "SEND_SIGNALING_PCAS_B_SCHEDULE", "SEND_SIGNALING_PCAS2_B",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION", "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_NOP",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE", "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_SCHEDULE",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_COPY_SCHEDULE",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_PUT",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_DECREMENT_DEPENDENCE",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH_SCHEDULE",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_SCHEDULE",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING",
    "SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_DEPENDENCE", "SET_INLINE_QMD_ADDRESS_A",
    "SET_INLINE_QMD_ADDRESS_A_QMD_ADDRESS_SHIFTED8_UPPER", "SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE",
    "SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE_INLINE_384", "SET_INLINE_QMD_ADDRESS_B",
    "LOAD_INLINE_QMD_DATA", "SET_REPORT_SEMAPHORE_PAYLOAD_LOWER",
    "SET_REPORT_SEMAPHORE_PAYLOAD_UPPER", "SET_REPORT_SEMAPHORE_ADDRESS_LOWER",
    "SET_REPORT_SEMAPHORE_ADDRESS_UPPER", "SET_REPORT_SEMAPHORE_ADDRESS_UPPER_UPPER",
    "REPORT_SEMAPHORE_EXECUTE", "REPORT_SEMAPHORE_EXECUTE_OPERATION",
    "REPORT_SEMAPHORE_EXECUTE_OPERATION_RELEASE", "REPORT_SEMAPHORE_EXECUTE_OPERATION_ACQUIRE",
    "REPORT_SEMAPHORE_EXECUTE_OPERATION_REPORT_ONLY", "REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE",
    "REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS",
    "REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_SEMAPHORE_ONE_WORD",
    "REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS",
    "REPORT_SEMAPHORE_EXECUTE_PAYLOAD_SIZE64", "REPORT_SEMAPHORE_EXECUTE_PAYLOAD_SIZE64_TRUE",
    "REPORT_SEMAPHORE_EXECUTE_REDUCTION_ENABLE", "REPORT_SEMAPHORE_EXECUTE_REDUCTION_OP",
] + [f"REPORT_SEMAPHORE_EXECUTE_REDUCTION_OP_RED_{op}" for op in REDUCTIONS] + [
    "SET_REPORT_SEMAPHORE_A", "SET_REPORT_SEMAPHORE_A_OFFSET_UPPER", "SET_REPORT_SEMAPHORE_B",
    "SET_REPORT_SEMAPHORE_C", "SET_REPORT_SEMAPHORE_D", "SET_REPORT_SEMAPHORE_D_OPERATION",
    "SET_REPORT_SEMAPHORE_D_OPERATION_RELEASE", "SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE",
    "SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_ONE_WORD", "SET_REPORT_SEMAPHORE_D_REDUCTION_ENABLE",
    "SET_REPORT_SEMAPHORE_D_REDUCTION_OP",
] + [f"SET_REPORT_SEMAPHORE_D_REDUCTION_OP_RED_{op}" for op in REDUCTIONS] + [
    "SET_QMD_VERSION", "SET_QMD_VERSION_CURRENT",
]

_RELEASE_V3 = ["ENABLE", "ADDRESS_LOWER", "ADDRESS_UPPER", "PAYLOAD_LOWER", "PAYLOAD_UPPER",
               "STRUCTURE_SIZE", "STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS",
               "STRUCTURE_SIZE_SEMAPHORE_ONE_WORD", "STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS",
               "PAYLOAD64B", "REDUCTION_ENABLE", "REDUCTION_OP", "REDUCTION_OP_RED_ADD",
               "REDUCTION_OP_RED_INC"]

# QMD version 03_00 (Ampere, Ada, Hopper) and 04_00 (Hopper): what a launch is (program, grid,
# block, shared memory, registers, constant buffers), what completes it (release semaphores) and
# what it starts after it (dependent QMDs).
QMD = {
    "QMDV03_00": [
        "QMD_VERSION", "QMD_MAJOR_VERSION", "DEPENDENCE_COUNTER", "CTA_RASTER_WIDTH",
        "CTA_RASTER_HEIGHT", "CTA_RASTER_DEPTH", "CTA_THREAD_DIMENSION0", "CTA_THREAD_DIMENSION1",
        "CTA_THREAD_DIMENSION2", "SHARED_MEMORY_SIZE", "REGISTER_COUNT_V", "PROGRAM_ADDRESS_LOWER",
        "PROGRAM_ADDRESS_UPPER", "CONSTANT_BUFFER_VALID", "CONSTANT_BUFFER_ADDR_LOWER",
        "CONSTANT_BUFFER_ADDR_UPPER", "CONSTANT_BUFFER_SIZE_SHIFTED4", "DEPENDENT_QMD0_POINTER",
        "DEPENDENT_QMD0_ENABLE", "DEPENDENT_QMD0_ACTION", "DEPENDENT_QMD1_ENABLE",
        "DEPENDENT_QMD1_ACTION", "DEPENDENT_QMD0_ACTION_QMD_SCHEDULE",
        "DEPENDENT_QMD0_ACTION_QMD_INVALIDATE_COPY_SCHEDULE",
        "DEPENDENT_QMD0_ACTION_QMD_DECREMENT_DEPENDENCE",
    ] + [f"RELEASE{k}_{f}" for k in range(3) for f in _RELEASE_V3],
    "QMDV04_00": [
        "QMD_MINOR_VERSION", "QMD_MAJOR_VERSION", "QMD_TYPE", "QMD_TYPE_GRID_NULL",
        "QMD_TYPE_GRID_CTA", "DEPENDENCE_COUNTER", "GRID_WIDTH", "GRID_HEIGHT", "GRID_DEPTH",
        "CTA_THREAD_DIMENSION0", "CTA_THREAD_DIMENSION1", "CTA_THREAD_DIMENSION2",
        "SHARED_MEMORY_SIZE", "REGISTER_COUNT", "PROGRAM_ADDRESS_LOWER", "PROGRAM_ADDRESS_UPPER",
        "CONSTANT_BUFFER_VALID", "CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6",
        "CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6", "CONSTANT_BUFFER_SIZE_SHIFTED4",
        "RELEASE_ENABLE", "RELEASE_STRUCTURE_SIZE", "RELEASE_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS",
        "RELEASE_STRUCTURE_SIZE_SEMAPHORE_ONE_WORD", "RELEASE_STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS",
        "RELEASE_REDUCTION_ENABLE", "RELEASE_REDUCTION_OP",
    ] + [f"RELEASE_REDUCTION_OP_RED_{op}" for op in REDUCTIONS] + [
        "RELEASE_PAYLOAD64B", "DEPENDENT_QMD_ENABLE",
        "DEPENDENT_QMD_ACTION", "DEPENDENT_QMD_ACTION_QMD_SCHEDULE",
        "DEPENDENT_QMD_ACTION_QMD_INVALIDATE_COPY_SCHEDULE",
        "DEPENDENT_QMD_ACTION_QMD_DECREMENT_DEPENDENCE", "DEPENDENT_QMD0_POINTER",
        "DEPENDENT_QMD1_POINTER",
    ] + [f"RELEASE_SEMAPHORE{k}_{f}" for k in range(3)
         for f in ["ADDR_LOWER", "ADDR_UPPER", "PAYLOAD_LOWER", "PAYLOAD_UPPER"]],
}

_NUM = r"(0x[0-9A-Fa-f]+|\d+)"
# MW(hi:lo), MW((a+(i)*s):(b+(i)*s)) — the QMD headers' bit ranges.
MW = re.compile(r"^\s*#\s*define\s+(\w+)(\(i\))?\s+MW\((.*)\)\s*$")
INDEXED = re.compile(r"^\(\s*(\d+)\s*\+\s*\(i\)\s*\*\s*(\d+)\s*\)$")
# hi:lo — the class headers' bit ranges.
RANGE = re.compile(r"^\s*#\s*define\s+(\w+)\s+(\d+):(\d+)\s*(?://.*|/\*.*)?$")
VALUE = re.compile(r"^\s*#\s*define\s+(\w+)\s+\(?\s*" + _NUM + r"\s*\)?\s*(?://.*|/\*.*)?$")
# (0x0320+(i)*4) — an indexed method.
ARRAY = re.compile(r"^\s*#\s*define\s+(\w+)\(i\)\s+\(\s*" + _NUM + r"\s*\+\s*\(i\)\s*\*\s*" +
                   _NUM + r"\s*\)\s*$")


def parse(text):
    """{name: fact} of one header: ("value", v), ("range", hi, lo), ("irange", (hb, hs), (lb, ls))
    for an indexed bit range, ("array", base, stride) for an indexed method."""
    out = {}
    for line in text.splitlines():
        m = MW.match(line)
        if m:
            hi_s, _, lo_s = m.group(3).rpartition(":")
            hi_s, lo_s = hi_s.strip(), lo_s.strip()
            if m.group(2):
                hi, lo = INDEXED.match(hi_s), INDEXED.match(lo_s)
                if hi and lo:
                    out[m.group(1)] = ("irange", (int(hi.group(1)), int(hi.group(2))),
                                       (int(lo.group(1)), int(lo.group(2))))
            elif hi_s.isdigit() and lo_s.isdigit():
                out[m.group(1)] = ("range", int(hi_s), int(lo_s))
            continue
        m = RANGE.match(line)
        if m:
            out[m.group(1)] = ("range", int(m.group(2)), int(m.group(3)))
            continue
        m = ARRAY.match(line)
        if m:
            out[m.group(1)] = ("array", int(m.group(2), 0), int(m.group(3), 0))
            continue
        m = VALUE.match(line)
        if m:
            out[m.group(1)] = ("value", int(m.group(2), 0))
    return out


def emit(name, fact):
    kind = fact[0]
    if kind == "value":
        return [f"#define RPG_{name} 0x{fact[1]:x}"]
    if kind == "range":
        return [f"#define RPG_{name}_HI {fact[1]}", f"#define RPG_{name}_LO {fact[2]}"]
    if kind == "irange":
        (hb, hs), (lb, ls) = fact[1], fact[2]
        return [f"#define RPG_{name}_HI(i) ({hb} + (i) * {hs})",
                f"#define RPG_{name}_LO(i) ({lb} + (i) * {ls})"]
    return [f"#define RPG_{name}(i) (0x{fact[1]:x} + (i) * {fact[2]})"]


def qmd_bytes(facts, prefix):
    """The QMD's size: its highest bit of any field, rounded up to 32 bytes (indexed fields with
    the largest index the header's own array sizes allow are not known: only the plain ones)."""
    top = max(f[1] for n, f in facts.items() if n.startswith(prefix) and f[0] == "range")
    return (top // 256 + 1) * 32


def check_same(ours, theirs, names, prefix_ours, prefix_theirs, what, widths):
    """Every define of `names` that the other class's header has must equal Hopper's, but for
    the width of a bit range that starts at the same bit (address fields: Hopper's are wider;
    the C code masks with Hopper's, and the other classes' higher bits are reserved, zero). Those
    are added to `widths`."""
    same = 0
    for n in names:
        a, b = ours.get(prefix_ours + n), theirs.get(prefix_theirs + n)
        if b is None:
            continue
        if a != b:
            if a is not None and a[0] == b[0] == "range" and a[2] == b[2]:
                widths.append(f"{prefix_theirs}{n} {b[1]}:{b[2]} ({what})")
                continue
            sys.exit(f"gen_gpu_compute: {prefix_theirs}{n} is {b} in {what}, "
                     f"{prefix_ours}{n} is {a} in Hopper's header")
        same += 1
    return same


def generate(read, rev):
    """read(path) -> text of a header at the revision."""
    methods = {c: parse(read(f"{DIR}cl{c}.h")) for c in (HOPPER, AMPERE, ADA)}
    qmds = {c: parse(read(f"{DIR}cl{c}qmd.h")) for c in (HOPPER, AMPERE, ADA)}
    hopper_m, hopper_q = methods[HOPPER], qmds[HOPPER]
    agreed, widths = 0, []
    for c in (AMPERE, ADA):
        agreed += check_same(hopper_m, methods[c], METHODS, "NVCBC0_", f"NV{c.upper()}_",
                             f"cl{c}.h", widths)
        agreed += check_same(hopper_q, qmds[c], QMD["QMDV03_00"], "NVCBC0_QMDV03_00_",
                             f"NV{c.upper()}_QMDV03_00_", f"cl{c}qmd.h", widths)
    lines = [
        "// generated by tools/gpu_methods/gen_gpu_compute.py from NVIDIA/open-gpu-doc",
        f"// {rev}; do not edit",
        "/* The compute class and QMD layouts the replay's fake GPU reads (src/replay/shim/launch.c):",
        " * inline-to-memory, launch and report-semaphore methods of Hopper's compute class",
        " * (classes/compute/clcbc0.h) and the fields of QMD versions 03_00 and 04_00",
        " * (clcbc0qmd.h). Ampere's and Ada's headers (clc6c0*.h, clc9c0*.h) agree with these in",
        f" * {agreed} of their defines that are read here (checked by the generator); these differ",
        " * only in width (Hopper's wider; their higher bits reserved):",
    ] + [f" *   {w}" for w in widths] + [
        " * RPG_<define> is the header's value; a bit range hi:lo is RPG_<define>_HI/_LO, counted in",
        " * bits from the QMD's first byte; an indexed one takes (i). */",
        "#ifndef CUDATOOL_REPLAY_GENERATED_GPU_COMPUTE_H",
        "#define CUDATOOL_REPLAY_GENERATED_GPU_COMPUTE_H",
        "",
        "/* clang-format off */",
        f"/* {DIR}clcbc0.h */",
    ]
    for n in METHODS:
        fact = hopper_m.get("NVCBC0_" + n)
        if fact is None:
            sys.exit(f"gen_gpu_compute: {DIR}clcbc0.h at {rev} has no define NVCBC0_{n}")
        lines += emit("NVCBC0_" + n, fact)
    lines.append(f"/* {DIR}clcbc0qmd.h */")
    for version, names in QMD.items():
        prefix = f"NVCBC0_{version}_"
        lines.append(f"#define RPG_{prefix}SIZE_BYTES {qmd_bytes(hopper_q, prefix)}")
        for n in names:
            fact = hopper_q.get(prefix + n)
            if fact is None:
                sys.exit(f"gen_gpu_compute: {DIR}clcbc0qmd.h at {rev} has no define {prefix}{n}")
            lines += emit(prefix + n, fact)
    lines += ["/* clang-format on */", "",
              "#endif /* CUDATOOL_REPLAY_GENERATED_GPU_COMPUTE_H */", ""]
    return "\n".join(lines)


def main():
    gen_gpu_methods.run(__doc__, "gen_gpu_compute",
                        lambda git_dir, rev: generate(lambda p: show(git_dir, rev, p), rev),
                        "c8607fe576b53ff821ffcf97e7548d2de11c4eaf",
                        "src/replay/generated/gpu_compute.h")


if __name__ == "__main__":
    main()
