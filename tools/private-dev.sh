#!/bin/sh
# tools/private-dev.sh CMD [ARGS...]: runs CMD in a private mount namespace whose /dev is a fresh
# tmpfs holding copies of the usual nodes (null, zero, full, random, urandom, tty), /dev/fd and
# the machine's /dev/shm. Device nodes the program makes there go when it ends: libcuda, run as
# root on a machine without the NVIDIA driver, mknods /dev/nvidiactl, which would otherwise stay
# in the machine's /dev (`cudatool trace` warns when that happens). Everything else (/proc, /sys,
# files) is the machine's. Needs root (CAP_SYS_ADMIN) for the namespace and the mounts.
#
#   sudo tools/private-dev.sh cudatool trace -o real.jsonl -- build/cuda_probe LIB init
#
# Exit status: CMD's; 2 without CMD; the failing step's when the private /dev cannot be made.
if [ $# -eq 0 ]; then
  echo "usage: tools/private-dev.sh CMD [ARGS...]" >&2
  exit 2
fi
exec unshare -m --propagation private sh -c 'set -e
d=$(mktemp -d)
mount -t tmpfs -o mode=755 cudatool-private-dev "$d"
for n in null zero full random urandom tty; do [ -e /dev/$n ] && cp -a /dev/$n "$d/"; done
ln -s /proc/self/fd "$d/fd"
mkdir "$d/shm"
[ -d /dev/shm ] && mount --bind /dev/shm "$d/shm"
mount --move "$d" /dev
rmdir "$d"
exec "$@"' sh "$@"
