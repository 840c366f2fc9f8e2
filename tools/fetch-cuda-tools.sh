#!/usr/bin/env bash
# Fetch NVIDIA's cuobjdump from Debian's nvidia-cuda-toolkit package (non-free) and cache it, for
# the tests that compare `cudatool cubins` with an independent decoder.
#
#   tools/fetch-cuda-tools.sh [DEST]   (DEST default: ${CUDATOOL_CUDA_TOOLS:-~/.cache/cudatool/cuda-tools})
#
# When /usr/local/cuda/bin/cuobjdump exists the tests use that one and nothing is downloaded.
# Otherwise the package named in CUDA_TOOLS_PACKAGE below is downloaded with apt-get through
# the same private apt configuration as tools/fetch-drivers.sh (no root needed, the system's
# sources untouched), and only that program is kept. Nothing NVIDIA ships is committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkg=nvidia-cuda-toolkit
ver=12.4.131~12.4.1-2  # trixie/non-free; its cuobjdump reads CUDA 13 cubins too
dest=${1:-${CUDATOOL_CUDA_TOOLS:-$HOME/.cache/cudatool/cuda-tools}}
if [[ -x /usr/local/cuda/bin/cuobjdump ]]; then
  echo "fetch-cuda-tools: using /usr/local/cuda/bin/cuobjdump"
  exit 0
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if [[ -x "$dest/cuobjdump" ]]; then
  echo "fetch-cuda-tools: cuobjdump cached in $dest"
  exit 0
fi
source "$here/lib/private-apt.sh"
private_apt_init fetch-cuda-tools
state=$_apt_state
mkdir -p "$state/deb"
echo "fetch-cuda-tools: download $pkg=$ver (about 90 MB, once)"
private_apt_download "$pkg=$ver" "$state/deb" || exit 1
x="$state/x"
dpkg-deb -x "$state"/deb/*.deb "$x"
for t in cuobjdump; do
  [[ -x "$x/usr/bin/$t" ]] || { echo "fetch-cuda-tools: $pkg holds no usr/bin/$t" >&2; exit 1; }
  cp "$x/usr/bin/$t" "$dest/$t.tmp" && mv "$dest/$t.tmp" "$dest/$t"
done
"$dest/cuobjdump" --version | tail -2
ls -l "$dest"
