# Sourced by the seed scripts (bash): sets
#   root  the source tree
#   data  the directory of the real captures (tests/data/captures or $CUDATOOL_CAPTURES), "" if none
#   bin   a built cudatool (build/, build-fuzz/ or build-bench/), "" if none
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
data=""
for d in "${CUDATOOL_CAPTURES:-}" "$root/tests/data/captures"; do
  if [[ -n $d && -r $d/trace_a.jsonl.xz ]]; then data=$d; break; fi
done
bin=""
for b in "$root/build/cudatool" "$root/build-fuzz/cudatool" "$root/build-bench/cudatool"; do
  if [[ -x $b ]]; then bin=$b; break; fi
done
