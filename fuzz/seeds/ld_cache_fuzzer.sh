#!/usr/bin/env bash
set -euo pipefail
[[ -r /etc/ld.so.cache ]] && cp /etc/ld.so.cache "$1/system-ld.so.cache"
exit 0
