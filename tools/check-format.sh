#!/bin/sh
# Fails (and lists the files) when a tracked C/C++ source differs from what clang-format makes of
# it with the root .clang-format (generated headers included: they mark their tables off).
# Run by ctest as `clang_format`; fix with: git ls-files ... | xargs clang-format -i
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (tools/install-deps.sh installs it)" >&2; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
else  # an exported tree without .git
  files=$(find src tests bench fuzz -name '*.[ch]' -o -name '*.[ch]pp' | sort)
fi
bad=""
for f in $files; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "check-format: not clang-format clean:$bad" >&2
  echo "fix: clang-format -i$bad" >&2
  exit 1
fi
echo "check-format: $(echo "$files" | wc -w) files clean"
