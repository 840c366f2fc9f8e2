#!/usr/bin/env bash
# Seeds: those of the cross-reference fuzzer (the fixture libraries of the default build, the
# kernel-ABI fixture among them): the surface reads the same libraries.
exec "$(dirname "$0")/xrefs_fuzzer.sh" "$@"
