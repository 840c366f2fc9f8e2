"""Sizes and offsets from the real headers: write a C file that includes them and prints
sizeof/offsetof, compile it with gcc for the host (x86-64 Linux, the ABI of the kernel driver's
ioctls), run it and read its output. Nothing about a layout is computed in Python.

A request the compiler rejects (a type or member that does not exist in this release) is
dropped and reported, and the rest is compiled again.
"""

import os
import re
import subprocess
import tempfile


class ProbeError(Exception):
    pass


def _c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def probe(includes, include_dirs, sizes, fields, cc="gcc", workdir=None, max_rounds=8,
          values=None):
    """Compiles and runs one probe.

    includes: header names for #include "..." in order; include_dirs: -I directories;
    sizes: type names to measure; fields: (type, member, is_array) to locate (a member may be a
    path, "a.b[0].c"); values: names of integer constants (enumerators, defines) to evaluate.
    Returns (sizes {type: bytes}, fields {(type, member): (offset, size, elem_size)}, dropped
    [reason strings]) and, when `values` is given (a list, maybe empty), a fourth item
    {name: value}.
    """
    requests = []  # (kind, key, C statement)
    for v in values or ():
        requests.append(("V", v, 'printf("V %%s %%lld\\n", %s, (long long)(%s));' % (
            _c_string(v), v)))
    for t in sizes:
        requests.append(("S", t, 'printf("S %%s %%zu\\n", %s, sizeof(%s));' % (_c_string(t), t)))
    for t, member, is_array in fields:
        elem = "sizeof(((%s*)0)->%s%s)" % (t, member, "[0]" if is_array else "")
        requests.append((
            "F", (t, member),
            'printf("F %%s %%s %%zu %%zu %%zu\\n", %s, %s, offsetof(%s, %s), '
            'sizeof(((%s*)0)->%s), %s);' % (_c_string(t), _c_string(member), t, member, t,
                                           member, elem)))
    dropped = []
    workdir = workdir or os.environ.get("RMPROBE_KEEP")  # keep the probe for a post-mortem
    own_dir = workdir is None
    if workdir:
        os.makedirs(workdir, exist_ok=True)
    else:
        workdir = tempfile.mkdtemp(prefix="rmprobe.")
    src = os.path.join(workdir, "probe.c")
    exe = os.path.join(workdir, "probe")
    try:
        for _ in range(max_rounds):
            header = ["#include <stddef.h>", "#include <stdio.h>"]
            header += ['#include "%s"' % h for h in includes]
            header += ["int main(void) {"]
            first_line = len(header) + 1
            lines = header + ["  " + r[2] for r in requests] + ["  return 0;", "}"]
            with open(src, "w") as f:
                f.write("\n".join(lines) + "\n")
            cmd = [cc, "-std=gnu11", "-w", "-fmax-errors=0", "-o", exe, src]
            for d in include_dirs:
                cmd += ["-I", d]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode == 0:
                break
            if os.environ.get("RMPROBE_KEEP"):
                with open(src + ".round%d.err" % len(dropped), "w") as f:
                    f.write(res.stderr)
            bad = set()
            for m in re.finditer(re.escape(src) + r":(\d+):\d+: error", res.stderr):
                line = int(m.group(1))
                if line >= first_line and line < first_line + len(requests):
                    bad.add(line - first_line)
            if not bad:
                raise ProbeError("probe does not compile:\n" + res.stderr[-4000:])
            for i in sorted(bad, reverse=True):
                kind, key, _ = requests.pop(i)
                dropped.append("%s %s" % ({"S": "size", "F": "field", "V": "value"}[kind], key))
        else:
            raise ProbeError("probe still fails after %d rounds" % max_rounds)
        run = subprocess.run([exe], capture_output=True, text=True, check=True)
    finally:
        if own_dir:
            for p in (src, exe):
                if os.path.exists(p):
                    os.unlink(p)
            os.rmdir(workdir)
    out_sizes, out_fields, out_values = {}, {}, {}
    for line in run.stdout.splitlines():
        parts = line.split()
        if parts[0] == "S":
            out_sizes[parts[1]] = int(parts[2])
        elif parts[0] == "F":
            out_fields[(parts[1], parts[2])] = (int(parts[3]), int(parts[4]), int(parts[5]))
        elif parts[0] == "V":
            out_values[parts[1]] = int(parts[2])
    if values is not None:
        return out_sizes, out_fields, dropped, out_values
    return out_sizes, out_fields, dropped
