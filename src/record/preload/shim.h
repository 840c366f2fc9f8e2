/*
 * Internals of the preload shim (libcudatool_preload.so), the LD_PRELOAD recorder of
 * `cudatool trace --mode preload`.
 *
 * The recording behaviour of the interposition layer (hooks.h) over the shim runtime
 * (../shim_rt/shim_rt.h: raw system calls, the `busy` flag, memory reads that never fault,
 * scratch memory, the fd table): a thread already inside the shim passes further calls straight
 * through and counts them as lost, and each event is written into a shared mapping of the trace
 * file as soon as the call returns (../shim_abi/preload_ctl.h), so that a crash loses nothing
 * recorded.
 *
 * Files, each calling only those listed after it (no two call each other):
 *   record_calls.c, env_calls.c  the behaviour (beh_*), and unwind.c / modules.c / eh_frame.c /
 *                                module_mem.c, the call stacks (unwind.h)
 *   shim_init.c                  start-up and fork: the control block, inherited fds, the exec
 *                                and fork events
 *   shim_out.c                   output: stack records, event lines into the shared trace file
 *   shim_json.c                  an event as one line of the trace format
 *   shim_core.c                  the recording's state: configuration, device paths and fds,
 *                                device mappings, the clock of the trace
 */
#ifndef CUDATOOL_PRELOAD_SHIM_H
#define CUDATOOL_PRELOAD_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "../../rm/nv_ioctl_abi.h"
#include "../shim_abi/preload_ctl.h"
#include "../shim_rt/shim_rt.h"

#define SHIM_HIDDEN RT_HIDDEN
#define SHIM_SYS RT_SYS

/* ---- events ---- */
enum shim_sys {
  SHIM_OPEN,
  SHIM_CLOSE,
  SHIM_DUP,
  SHIM_IOCTL,
  SHIM_MMAP,
  SHIM_MUNMAP,
  SHIM_EXECVE,
  SHIM_FORK,
  /* v2: the environment events (docs/trace-format.md) */
  SHIM_STAT,
  SHIM_FILE,
  SHIM_MKNOD,
  SHIM_SYMLINK,
  SHIM_READLINK,
  SHIM_CHMOD,
  SHIM_UNLINK
};

/* The argument, its nested buffers (XFER, params, rights) and those behind pointer members. */
#define SHIM_MAX_BUFS 16
#define SHIM_MAX_FRAMES 32 /* v2: call stack depth */

struct shim_buf {
  struct nvtr_buf_plan plan;
  uint8_t* pre; /* set just before formatting (the scratch slot may move while reading) */
  uint8_t* post;
  size_t pre_at, post_at; /* offsets in scratch slot 0 */
  uint64_t pre_len, post_len;
  int pre_err, post_err; /* errno when short; 0 when complete (or a bound that was met) */
  int over_cap;
};

struct shim_event {
  int sys;
  uint64_t t, dur;
  int has_dur;
  int pid, tid;
  int fd;
  const char* path;
  uint64_t req;
  int64_t ret;
  int err;
  uint64_t flags, addr, len, prot, off;
  int child;
  /* v2: call stack (frames[] after bufs: only nframes is cleared per call) */
  int nframes;
  const char* stack_error; /* NULL: the walk ended normally */
  uint64_t stack_ref;      /* v3: set by shim_emit: the stack record naming frames[], or 0 */
  /* v2: environment events */
  const char* op;     /* the call as the program made it: "stat", "fopen", … */
  const char* target; /* symlink, readlink */
  uint64_t mode, rdev, st_size;
  int has_stat;
  const uint8_t* content; /* file: the bytes read (content_len), when has_content */
  uint64_t content_len;
  int has_content, content_bounded;
  const char* entries; /* file on a directory: NUL-terminated names, one after the other */
  uint64_t entries_len;
  int has_entries;
  int content_err;       /* file: errno of the recorder's read of it (0: read, or none to read) */
  int entries_truncated; /* file: names past the recorder's bound were left out */
  int has_owner;         /* chown: the uid and gid asked for */
  int64_t uid, gid;
  /* v2, ioctl: second-level buffers the pointer rules named past NVTR_MAX_POINTEES (left out),
   * and the role of the parameters they were behind */
  int pointees_dropped;
  const char* pointees_dropped_role;
  int nbufs; /* ioctl: bufs[0] is the argument */
  struct shim_buf bufs[SHIM_MAX_BUFS];
  uint64_t frames[SHIM_MAX_FRAMES];
};

/* ---- the recording's state (shim_core.c) ---- */
SHIM_HIDDEN extern struct cudatool_preload_ctl* shim_ctl; /* NULL until attached */
SHIM_HIDDEN extern uint64_t shim_t0_ns;                   /* the trace's t0 (CLOCK_MONOTONIC) */

static inline uint64_t shim_now(void) { /* ns since the trace's t0 */
  uint64_t n = rt_now_ns();
  return n > shim_t0_ns ? n - shim_t0_ns : 0;
}
static inline void shim_count(uint64_t* counter) {
  rt_count(counter);
}
/* After a call: scratch memory grown past 1 MiB for it is given back. */
static inline void shim_scratch_trim(void) {
  rt_scratch_trim(1u << 20);
}

/* Takes the configuration from the environment the launcher set and attaches the control block
 * (checking its version): 0 when this process is not being recorded. */
SHIM_HIDDEN int shim_configure(void);
SHIM_HIDDEN const char* shim_trace_path(void);
SHIM_HIDDEN int shim_dev_of_fd(int fd); /* path index, or -1 */
SHIM_HIDDEN void shim_fd_set(int fd, int idx);
SHIM_HIDDEN void shim_fd_clear(int fd);
SHIM_HIDDEN const char* shim_path(int idx);
SHIM_HIDDEN int shim_path_kind(int idx);
/* Whether (dirfd, path) names a device; fills abs (PATH_MAX) with the absolute path. */
SHIM_HIDDEN int shim_device_path(int dirfd, const char* path, char* abs, int* idx);
/* abs (PATH_MAX) = (dirfd, path) made absolute, "." and ".." folded; 0 when it cannot be. */
SHIM_HIDDEN int shim_abs_path(int dirfd, const char* path, char* abs);
/* Whether an absolute path names a device (then *idx is its path index). */
SHIM_HIDDEN int shim_device_match(const char* abs, int* idx);
/* --env (docs/trace-format.md, "Environment events"): recording on; an absolute path in it. */
SHIM_HIDDEN int shim_env_on(void);
SHIM_HIDDEN int shim_env_match(const char* abs);
SHIM_HIDDEN void shim_map_add(uint64_t addr, uint64_t len, int idx);
SHIM_HIDDEN int shim_map_overlaps(uint64_t addr, uint64_t len);
SHIM_HIDDEN int shim_map_remove(uint64_t addr, uint64_t len); /* path index or -1 */
/* The tables' locks, held across fork (shim_init.c) so that the child's copies are consistent. */
SHIM_HIDDEN void shim_tables_lock(void);
SHIM_HIDDEN void shim_tables_unlock(void);
SHIM_HIDDEN uint64_t shim_max_buffer(void);
SHIM_HIDDEN const struct nvtr_uvm_branch* shim_uvm_branch(void); /* UVM sizes of the recording */
SHIM_HIDDEN const struct nvtr_rm_branch* shim_rm_branch(void);   /* RM sizes and pointer rules */

/* ---- start-up (shim_init.c) ---- */
SHIM_HIDDEN int shim_ready(void); /* started and recording */

/* ---- environment fds (env_calls.c) ---- */
/* fds opened on environment paths, with the path, for fstat. */
SHIM_HIDDEN void shim_env_fd_set(int fd, const char* abs);
SHIM_HIDDEN void shim_env_fd_clear(int fd);
/* An open of a path that is not a device: performed, recorded when in --env. */
struct shim_call;
SHIM_HIDDEN long shim_env_open(struct shim_call* c, int dirfd, const char* path, uint64_t flags);

/* ---- output (shim_out.c) ---- */
SHIM_HIDDEN void shim_emit(struct shim_event* ev); /* assigns seq, formats, writes */
/* v2: writes one complete line that is not an event (a module record; no seq). */
SHIM_HIDDEN void shim_emit_line(const char* line, size_t len);
/* In a forked child: stack records other threads were writing died with them. */
SHIM_HIDDEN void shim_out_forked_child(void);

/* ---- formatting (shim_json.c): max_buffer is the recording's --max-buffer ---- */
SHIM_HIDDEN size_t shim_event_bound(const struct shim_event* ev);
SHIM_HIDDEN size_t shim_format_event(char* out, uint64_t seq, const struct shim_event* ev,
                                     uint64_t max_buffer);
/* v3: {"stack_record":{"id":…,"stack":[…]}}\n, at most SHIM_STACK_RECORD_BOUND(n) bytes. */
#define SHIM_STACK_RECORD_BOUND(n) (64 + 21 * (size_t)(n))
SHIM_HIDDEN size_t shim_format_stack_record(char* out, uint64_t id, const uint64_t* frames, int n);

#endif /* CUDATOOL_PRELOAD_SHIM_H */
