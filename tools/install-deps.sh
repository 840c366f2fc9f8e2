#!/usr/bin/env bash
# Installs the Debian bookworm packages cudatool builds, tests and benchmarks with; only what is
# missing, with sudo when not root. Nothing outside Debian's archive is needed.
set -euo pipefail
pkgs=(
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libzstd-dev libxxhash-dev libcapstone-dev liblzma-dev liblz4-dev zlib1g-dev libsqlite3-dev
  libdw-dev libelf-dev libbz2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  binutils elfutils gdb sqlite3 linux-perf strace xz-utils zstd jq dpkg-dev apt
  python3 python3-pyelftools hyperfine clang-format debian-archive-keyring
  chromium  # the `ab --html` page is tested in it, headless (tests/browser/ab_html_check.py)
  uftrace   # reads `symbolize --format uftrace` files (tests/integration/uftrace_test.cpp), and
            # is the baseline of the function-recording benchmark (bench/cases/functions_record.py)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all build dependencies present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
