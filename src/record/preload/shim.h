/*
 * Internals of the preload shim (libcudatool_preload.so), the LD_PRELOAD recorder of
 * `cudatool trace --mode preload`.
 *
 * It runs inside arbitrary programs (PyTorch, …), so it is plain C with no C++ runtime, makes its
 * own system calls with the `syscall` instruction (never through the functions it interposes),
 * allocates only with mmap, takes no lock that a signal handler of the same thread could want
 * (a thread already inside the shim passes further calls straight through and counts them as
 * lost), and writes each event into a shared mapping of the trace file as soon as the call
 * returns (preload_ctl.h), so that a crash loses nothing recorded.
 */
#ifndef CUDATOOL_PRELOAD_SHIM_H
#define CUDATOOL_PRELOAD_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "../../rm/nv_ioctl_abi.h"
#include "../shim_abi/preload_ctl.h"

#define SHIM_HIDDEN __attribute__((visibility("hidden")))

/* ---- raw system calls: return -errno on failure ---- */
static inline long shim_sys6(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#define SHIM_SYS(n, a, b, c) shim_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

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

/* ---- per-thread state (initial-exec TLS) ---- */
struct shim_tls {
  int busy;        /* inside the shim: further device calls pass through (counted lost) */
  int tid;         /* cached gettid() */
  int fork_tid;    /* tid of the thread that called fork (atfork prepare) */
  int fork_locked; /* the atfork prepare handler took the table locks */
  uint64_t stack_lo, stack_hi; /* the mapping that holds this thread's stack */
  int stack_probes;
  uint8_t* scratch[2]; /* 0: buffer copies of the call in progress, 1: its formatted line */
  size_t scratch_cap[2];
};

SHIM_HIDDEN extern __thread struct shim_tls shim_t __attribute__((tls_model("initial-exec")));
SHIM_HIDDEN extern struct cudatool_preload_ctl* shim_ctl;
SHIM_HIDDEN extern int shim_pid;

/* ---- core (shim_core.c) ---- */
SHIM_HIDDEN int shim_ready(void); /* initialised and recording */
SHIM_HIDDEN void shim_init(void);
SHIM_HIDDEN int shim_tid(void);
SHIM_HIDDEN uint64_t shim_now(void);    /* ns since the trace's t0 */
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
/* fds opened on environment paths, with the path, for fstat (env_calls.c). */
SHIM_HIDDEN void shim_env_fd_set(int fd, const char* abs);
SHIM_HIDDEN void shim_env_fd_clear(int fd);
/* An open of a path that is not a device (env_calls.c): performed, recorded when in --env. */
struct shim_call;
SHIM_HIDDEN long shim_env_open(struct shim_call* c, int dirfd, const char* path, uint64_t flags);
SHIM_HIDDEN void shim_map_add(uint64_t addr, uint64_t len, int idx);
SHIM_HIDDEN int shim_map_overlaps(uint64_t addr, uint64_t len);
SHIM_HIDDEN int shim_map_remove(uint64_t addr, uint64_t len); /* path index or -1 */
/* Reads n bytes at addr of this process without faulting; returns how many were readable. */
SHIM_HIDDEN uint64_t shim_read(uint64_t addr, uint8_t* dst, uint64_t n, int bounded, int* err);
/* v2: the mapping that holds this thread's stack pointer `sp` (for the unwinder, unwind.h). */
SHIM_HIDDEN int shim_stack_range(uint64_t sp, uint64_t* lo, uint64_t* hi);
/* Per-thread memory of at least n bytes; `keep` preserves what the slot held (it may move). */
SHIM_HIDDEN uint8_t* shim_scratch(int slot, size_t n, int keep);
SHIM_HIDDEN void shim_scratch_trim(void);
SHIM_HIDDEN void shim_emit(struct shim_event* ev); /* assigns seq, formats, writes */
/* v2: writes one complete line that is not an event (a module record; no seq). */
SHIM_HIDDEN void shim_emit_line(const char* line, size_t len);
SHIM_HIDDEN void shim_count(uint64_t* counter);
SHIM_HIDDEN uint64_t shim_max_buffer(void);
SHIM_HIDDEN const struct nvtr_uvm_branch* shim_uvm_branch(void); /* UVM sizes of the recording */
SHIM_HIDDEN const struct nvtr_rm_branch* shim_rm_branch(void);   /* RM sizes and pointer rules */

/* ---- formatting (shim_json.c) ---- */
SHIM_HIDDEN size_t shim_event_bound(const struct shim_event* ev);
SHIM_HIDDEN size_t shim_format_event(char* out, uint64_t seq, const struct shim_event* ev);
/* v3: {"stack_record":{"id":…,"stack":[…]}}\n, at most SHIM_STACK_RECORD_BOUND(n) bytes. */
#define SHIM_STACK_RECORD_BOUND(n) (64 + 21 * (size_t)(n))
SHIM_HIDDEN size_t shim_format_stack_record(char* out, uint64_t id, const uint64_t* frames, int n);

#endif /* CUDATOOL_PRELOAD_SHIM_H */
