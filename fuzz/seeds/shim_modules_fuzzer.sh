#!/usr/bin/env bash
# Seeds: fixture libraries as dl_iterate_phdr would show them: their program headers (from the
# file's ELF header) and the file as the image (cut at 1 MiB), with PCs spread over the file
# (see shim_modules_fuzzer.cpp).
set -euo pipefail
out=$1
source "$(dirname "$0")/common.sh"
i=0
for f in "$root"/build/tests/fixtures/stacks/stackfix/libstackfix.so \
         "$root"/build/tests/fixtures/*.so; do
  [[ -f "$f" && ! -L "$f" ]] || continue
  python3 - "$f" "$out/shim-modules-$i" <<'PY' || true
import struct, sys
d = open(sys.argv[1], 'rb').read()
if d[:4] != b'\x7fELF' or d[4] != 2:
    sys.exit(1)
phoff, = struct.unpack_from('<Q', d, 32)
phentsize, phnum = struct.unpack_from('<HH', d, 54)
n = min(phnum, 16)
ph = b''.join(d[phoff + k * phentsize: phoff + k * phentsize + 56] for k in range(n))
image = d[:1 << 20]
for j, pc in enumerate((len(image) // 4, len(image) // 2, 3 * len(image) // 4)):
    open(f"{sys.argv[2]}-{j}", 'wb').write(bytes([n]) + ph + struct.pack('<I', pc) + image)
PY
  i=$((i + 1))
done
exit 0
