#!/usr/bin/env bash
# Fetch and cache real libcuda builds from Debian's non-free archive.
#
#   tools/fetch-drivers.sh [--only VERSION] [DEST]
#                                  (DEST default: ${CUDATOOL_DRIVERS:-~/.cache/cudatool/drivers})
#
# For every line of tools/drivers.list: `apt-get download <package>=<version>` through a private
# apt configuration (tools/apt/cudatool-debian-nonfree.sources; no root needed, the system's
# sources are not touched), then extract libcuda.so.<upstream version> next to the .deb.
# Already-cached files are kept. NVIDIA's binaries are never committed: this is how tests get them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
only=""
if [[ "${1:-}" == "--only" ]]; then
  only=$2
  shift 2
fi
dest=${1:-${CUDATOOL_DRIVERS:-$HOME/.cache/cudatool/drivers}}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

need_download=0
while read -r pkg ver suite; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  upstream=${ver%%-*}
  [[ -n "$only" && "$upstream" != "$only" ]] && continue
  [[ -f "$dest/libcuda.so.$upstream" ]] || need_download=1
done < "$here/drivers.list"
if [[ $need_download == 0 ]]; then
  echo "fetch-drivers: all builds cached in $dest"
  exit 0
fi

for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "fetch-drivers: $tool is required (Debian/Ubuntu)" >&2; exit 2; }
done

state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/etc/sources.list.d"
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
echo "fetch-drivers: updating a private package index (Debian non-free)…"
apt-get "${apt_opts[@]}" -qq update

status=0
while read -r pkg ver suite; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  upstream=${ver%%-*}
  [[ -n "$only" && "$upstream" != "$only" ]] && continue
  if [[ -f "$dest/libcuda.so.$upstream" ]]; then
    echo "fetch-drivers: cached   libcuda.so.$upstream"
    continue
  fi
  echo "fetch-drivers: download $pkg=$ver ($suite)"
  if ! (cd "$dest" && apt-get "${apt_opts[@]}" -qq download "$pkg=$ver"); then
    echo "fetch-drivers: could not download $pkg=$ver; is deb.debian.org reachable, and is" \
         "this version still in the archive? (edit tools/drivers.list)" >&2
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
