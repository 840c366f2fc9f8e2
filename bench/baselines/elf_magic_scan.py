"""Baseline: the plain Python scan for embedded cubins a user would write (and that
the shared BASELINES.md times): find every b"\\x7fELF", keep those whose e_machine is 190
(EM_CUDA), size each from its headers (the end of the header tables and of every section with
file bytes: sections may follow the section header table), print offset, size and e_flags.
It decodes nothing else.
"""
import struct
import sys

with open(sys.argv[1], "rb") as f:
    data = f.read()
i = data.find(b"\x7fELF")
n = total = 0
out = []
while i >= 0:
    if len(data) - i >= 64 and struct.unpack_from("<H", data, i + 18)[0] == 190:
        phoff, shoff = struct.unpack_from("<QQ", data, i + 32)
        flags, = struct.unpack_from("<I", data, i + 48)
        phnum, = struct.unpack_from("<H", data, i + 56)
        shnum, = struct.unpack_from("<H", data, i + 60)
        size = max(shoff + 64 * shnum, phoff + 56 * phnum)
        for k in range(shnum):
            sh_type, = struct.unpack_from("<I", data, i + shoff + 64 * k + 4)
            if sh_type != 8:  # SHT_NOBITS
                off, sz = struct.unpack_from("<QQ", data, i + shoff + 64 * k + 24)
                size = max(size, off + sz)
        out.append("%#x %d %#x" % (i, size, flags))
        n += 1
        total += size
    i = data.find(b"\x7fELF", i + 1)
sys.stdout.write("\n".join(out) + "\n%d images, %d bytes\n" % (n, total))
