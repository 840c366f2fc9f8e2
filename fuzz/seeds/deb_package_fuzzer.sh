#!/usr/bin/env bash
# Seeds: a small real-shaped .deb built with dpkg-deb (xz and zstd data members) and raw tar /
# compressed streams.
set -euo pipefail
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/pkg/DEBIAN" "$tmp/pkg/usr/lib/x86_64-linux-gnu"
printf 'Package: fuzz\nVersion: 1\nArchitecture: amd64\nMaintainer: x <x@x>\nDescription: x\n' > "$tmp/pkg/DEBIAN/control"
printf '\177ELF-not-really' > "$tmp/pkg/usr/lib/x86_64-linux-gnu/libcuda.so.1.2.3"
ln -s libcuda.so.1.2.3 "$tmp/pkg/usr/lib/x86_64-linux-gnu/libcuda.so.1"
command -v dpkg-deb >/dev/null || exit 0
dpkg-deb -Zxz --root-owner-group -b "$tmp/pkg" "$out/seed-xz.deb" >/dev/null
dpkg-deb -Zzstd --root-owner-group -b "$tmp/pkg" "$out/seed-zst.deb" >/dev/null 2>&1 || true
dpkg-deb -Zgzip --root-owner-group -b "$tmp/pkg" "$out/seed-gz.deb" >/dev/null
tar -C "$tmp/pkg" -cf "$out/seed.tar" usr
xz -c "$out/seed.tar" > "$out/seed.tar.xz"
exit 0
