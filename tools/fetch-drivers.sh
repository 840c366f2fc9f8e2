#!/usr/bin/env bash
# Fetch and cache real libcuda builds from Debian's non-free archive.
#
#   tools/fetch-drivers.sh [--only VERSION] [DEST]
#                                  (DEST default: ${CUDATOOL_DRIVERS:-~/.cache/cudatool/drivers})
#   tools/fetch-drivers.sh --cuda-toolkit [DEST]
#                                  (DEST default: ${CUDATOOL_CUDA_CACHE:-~/.cache/cudatool/cuda-toolkit})
#
# For every line of tools/drivers.list: `apt-get download <package>=<version>` through a private
# apt configuration (tools/apt/cudatool-debian-nonfree.sources; no root needed, the system's
# sources are not touched), then extract libcuda.so.<upstream version> next to the .deb.
# Already-cached files are kept. NVIDIA's binaries are never committed: this is how tests get them.
#
# --cuda-toolkit: for machines without a CUDA toolkit, fetches the pieces listed in
# tools/cuda-toolkit.list (CUDA 12.4 headers and libcudart from Debian) the same way, keeping only
# the listed paths. The tests use /usr/local/cuda, or $CUDATOOL_CUDA_HOME, before this cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
only=""
toolkit=0
if [[ "${1:-}" == "--only" ]]; then
  only=$2
  shift 2
elif [[ "${1:-}" == "--cuda-toolkit" ]]; then
  toolkit=1
  shift
fi
if [[ $toolkit == 1 ]]; then
  dest=${1:-${CUDATOOL_CUDA_CACHE:-$HOME/.cache/cudatool/cuda-toolkit}}
else
  dest=${1:-${CUDATOOL_DRIVERS:-$HOME/.cache/cudatool/drivers}}
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

need_download=0
if [[ $toolkit == 1 ]]; then
  while read -r pkg ver suite paths; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    [[ -f "$dest/.done-$pkg-$ver" ]] || need_download=1
  done < "$here/cuda-toolkit.list"
else
  while read -r pkg ver suite; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    upstream=${ver%%-*}
    [[ -n "$only" && "$upstream" != "$only" ]] && continue
    [[ -f "$dest/libcuda.so.$upstream" ]] || need_download=1
  done < "$here/drivers.list"
fi
if [[ $need_download == 0 ]]; then
  echo "fetch-drivers: everything cached in $dest"
  exit 0
fi

source "$here/lib/private-apt.sh"
private_apt_init fetch-drivers

status=0
if [[ $toolkit == 1 ]]; then
  while read -r pkg ver suite paths; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    [[ -f "$dest/.done-$pkg-$ver" ]] && { echo "fetch-drivers: cached   $pkg=$ver"; continue; }
    echo "fetch-drivers: download $pkg=$ver ($suite; only ${paths} are kept)"
    dl=$(mktemp -d "$dest/.dl-XXXXXX")
    if ! private_apt_download "$pkg=$ver" "$dl"; then
      rm -rf "$dl"
      status=1
      continue
    fi
    deb=$(ls "$dl"/*.deb | head -1)
    patterns=()
    for p in $paths; do patterns+=("./$p"); done
    if dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest" --wildcards "${patterns[@]}"; then
      : > "$dest/.done-$pkg-$ver"
    else
      echo "fetch-drivers: $deb lacks some of: $paths" >&2
      status=1
    fi
    rm -rf "$dl"
  done < "$here/cuda-toolkit.list"
  find "$dest" -type f -o -type l | sort
  exit $status
fi
while read -r pkg ver suite; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  upstream=${ver%%-*}
  [[ -n "$only" && "$upstream" != "$only" ]] && continue
  if [[ -f "$dest/libcuda.so.$upstream" ]]; then
    echo "fetch-drivers: cached   libcuda.so.$upstream"
    continue
  fi
  echo "fetch-drivers: download $pkg=$ver ($suite)"
  if ! private_apt_download "$pkg=$ver" "$dest"; then
    status=1
    continue
  fi
  deb=$(ls "$dest"/"${pkg}"_*"${upstream}"*_amd64.deb | head -1)
  x=$(mktemp -d)
  dpkg-deb -x "$deb" "$x"
  lib=$(find "$x" -type f -name "libcuda.so.$upstream" | head -1)
  if [[ -z "$lib" ]]; then
    echo "fetch-drivers: $deb holds no libcuda.so.$upstream" >&2
    status=1
  else
    cp "$lib" "$dest/libcuda.so.$upstream.tmp" && mv "$dest/libcuda.so.$upstream.tmp" "$dest/libcuda.so.$upstream"
  fi
  rm -rf "$x"
done < "$here/drivers.list"
ls -l "$dest"
exit $status
