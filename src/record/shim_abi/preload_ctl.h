/*
 * The control block shared by `cudatool trace --mode preload` (src/record/preload_launcher.cpp)
 * and every copy of the preload shim (src/record/preload/) in the traced processes: a small file
 * mapped MAP_SHARED by all of them. Plain C, read by both sides.
 *
 * Events are appended to the trace file itself, which every shim maps MAP_SHARED: a writer
 * reserves [off, off + len) by advancing `write_off`, makes sure the file is at least that long
 * (`extended_to`, grown in whole chunks with fallocate), and copies its line in. What is copied
 * is in the kernel's page cache at once, so a crash or kill of the traced program loses nothing
 * already recorded. cudatool ends the recording by setting kPreloadClosed in `write_off` (after
 * which shims record nothing), truncates the file to the offset it read, and appends the trailer.
 *
 * Version rule. A shim checks the magic when it attaches (shim_core.c map_ctl) and records
 * nothing when it differs: a shim of another build (--preload-lib) must not write with a layout
 * it does not share. The magic reads "cudtpld" and the digit '0' + CUDATOOL_PRELOAD_VERSION (as a
 * number: its lowest byte is the digit). Bump the version
 * when a member of struct cudatool_preload_ctl moves, changes size or meaning, or is removed;
 * when an environment variable below changes name or meaning; when the events' line protocol
 * changes (the reservation through write_off and extended_to, the CLOSED bit, CHUNK). A member
 * appended at the end that zero means "off" needs no bump (an older shim ignores it; cudatool
 * zeroes the block). The trace format written into the file has its own version
 * (docs/trace-format.md), bumped by its own rule.
 */
#ifndef CUDATOOL_TRACE_PRELOAD_CTL_H
#define CUDATOOL_TRACE_PRELOAD_CTL_H

#include <stdint.h>

#define CUDATOOL_PRELOAD_VERSION 1
#define CUDATOOL_PRELOAD_MAGIC \
  (0x63756474706c6430ULL + CUDATOOL_PRELOAD_VERSION) /* "cudtpld" and the version digit */
#define CUDATOOL_PRELOAD_CLOSED (1ULL << 63)
#define CUDATOOL_PRELOAD_CHUNK (64ULL << 20) /* file growth and mapping window */

/* Environment the launcher sets for the traced command. */
#define CUDATOOL_ENV_TRACE "CUDATOOL_PRELOAD_TRACE"     /* the trace file events go to */
#define CUDATOOL_ENV_CTL "CUDATOOL_PRELOAD_CTL"         /* this control block */
#define CUDATOOL_ENV_DEVICES "CUDATOOL_PRELOAD_DEVICES" /* comma-separated globs */
#define CUDATOOL_ENV_ENV "CUDATOOL_PRELOAD_ENV"         /* --env globs (absent: none) */

struct cudatool_preload_ctl {
  uint64_t magic;
  uint64_t t0_ns;         /* CLOCK_MONOTONIC of the start: event times are relative to it */
  uint64_t max_buffer;    /* largest buffer read */
  uint64_t seq;           /* next sequence number (atomic) */
  uint64_t write_off;     /* next free byte of the trace file, | CLOSED when ended (atomic) */
  uint64_t extended_to;   /* the file is at least this long (atomic) */
  uint64_t route_ioctl;   /* device ioctls that came through libc's ioctl() (atomic) */
  uint64_t route_syscall; /* … through syscall(SYS_ioctl, …) (atomic) */
  uint64_t lost;          /* device calls seen but not recorded (atomic) */
  uint64_t processes;     /* shim instances started (one per program image) (atomic) */
  uint64_t written;       /* event lines written (atomic) */
  uint64_t uvm_major;     /* driver major whose UVM parameter sizes the shims use (0: newest) */
  uint64_t stacks;        /* v2: 1 when device calls carry call stacks and modules are recorded */
  uint64_t stack_ids;     /* v3: stack record ids handed out, trace-wide (atomic; first id 1) */
};

#endif /* CUDATOOL_TRACE_PRELOAD_CTL_H */
