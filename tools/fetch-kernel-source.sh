#!/usr/bin/env bash
# Fetch and cache the headers of Debian's nvidia-open-kernel-source packages (contrib).
#
#   tools/fetch-kernel-source.sh [DEST]
#                 (DEST default: ${CUDATOOL_KERNEL_SOURCE:-~/.cache/cudatool/kernel-source})
#
# For every line of tools/kernel-sources.list: `apt-get download <package>=<version>` through the
# private apt configuration of tools/fetch-drivers.sh (tools/apt/*.sources; no root, the
# system's sources untouched), then keep only common/inc/*.h and nvidia-uvm/*.h of the source
# tarball in DEST/<upstream version>/. The tests/integration RM spot-checks read them there.
# NVIDIA's files are never committed: this is how tests get them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-${CUDATOOL_KERNEL_SOURCE:-$HOME/.cache/cudatool/kernel-source}}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

need=0
while read -r pkg ver suite; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  [[ -f "$dest/${ver%%-*}/.complete" ]] || need=1
done < "$here/kernel-sources.list"
if [[ $need == 0 ]]; then
  echo "fetch-kernel-source: all headers cached in $dest"
  exit 0
fi
for tool in tar xz; do
  command -v "$tool" >/dev/null || { echo "fetch-kernel-source: $tool is required" >&2; exit 2; }
done
source "$here/lib/private-apt.sh"
private_apt_init fetch-kernel-source
state=$_apt_state
mkdir -p "$state/dl"

status=0
while read -r pkg ver suite; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  upstream=${ver%%-*}
  out="$dest/$upstream"
  if [[ -f "$out/.complete" ]]; then
    echo "fetch-kernel-source: cached   $upstream"
    continue
  fi
  echo "fetch-kernel-source: download $pkg=$ver ($suite)"
  if ! private_apt_download "$pkg=$ver" "$state/dl"; then
    status=1
    continue
  fi
  deb=$(ls "$state/dl/${pkg}_"*"${upstream}"*_amd64.deb | head -1)
  x=$(mktemp -d)
  # The package holds one tarball of the module sources; keep the headers the tests read.
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" --wildcards './usr/src/*.tar.xz'
  tarball=$(find "$x" -name '*.tar.xz' | head -1)
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  xz -dc "$tarball" | tar -x -C "$out.tmp" --strip-components=2 --wildcards \
    '*/common/inc/*.h' '*/nvidia-uvm/*.h'
  rm -rf "$x" "$deb"
  if [[ ! -f "$out.tmp/common/inc/nvstatuscodes.h" || ! -f "$out.tmp/nvidia-uvm/uvm_ioctl.h" ]]; then
    echo "fetch-kernel-source: $pkg=$ver lacks the expected headers" >&2
    rm -rf "$out.tmp"
    status=1
    continue
  fi
  rm -rf "$out" && mv "$out.tmp" "$out" && touch "$out/.complete"
done < "$here/kernel-sources.list"
ls -l "$dest"
exit $status
