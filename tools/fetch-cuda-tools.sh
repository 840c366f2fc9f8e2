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
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "fetch-cuda-tools: $tool is required (Debian/Ubuntu)" >&2; exit 2; }
done
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/etc/sources.list.d" "$state/deb"
cp "$here/apt/cudatool-debian-nonfree.sources" "$state/etc/sources.list.d/"
: > "$state/etc/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$state/etc/sources.list"
  -o "Dir::Etc::SourceParts=$state/etc/sources.list.d"
  -o "Dir::State::Lists=$state/lists"
  -o "Dir::Cache=$state/cache"
  -o "Dir::State::Status=/dev/null"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=$(id -un)"
  -o "Acquire::Retries=3"
)
echo "fetch-cuda-tools: updating a private package index (Debian non-free)…"
apt-get "${apt_opts[@]}" -qq update
echo "fetch-cuda-tools: download $pkg=$ver (about 90 MB, once)"
if ! (cd "$state/deb" && apt-get "${apt_opts[@]}" -qq download "$pkg=$ver"); then
  echo "fetch-cuda-tools: could not download $pkg=$ver; is deb.debian.org reachable, and is this" \
       "version still in the archive? (edit this script)" >&2
  exit 1
fi
x="$state/x"
dpkg-deb -x "$state"/deb/*.deb "$x"
for t in cuobjdump; do
  [[ -x "$x/usr/bin/$t" ]] || { echo "fetch-cuda-tools: $pkg holds no usr/bin/$t" >&2; exit 1; }
  cp "$x/usr/bin/$t" "$dest/$t.tmp" && mv "$dest/$t.tmp" "$dest/$t"
done
"$dest/cuobjdump" --version | tail -2
ls -l "$dest"
