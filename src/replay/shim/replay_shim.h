/*
 * Internals of the replay shim (libcudatool_replay.so): the behaviour of the shared interposition
 * layer (src/record/preload/hooks.h) that answers a program's device calls from an answer table
 * (src/record/shim_abi/replay_abi.h) instead of performing them, redirects the driver's view of the
 * system into a private directory tree, and plays a minimal GPU (fake_gpu.c).
 *
 * Plain C inside arbitrary programs, over the shim runtime (src/record/shim_rt/shim_rt.h) as the
 * recording shim is: its own system calls, no allocation but mmap, no lock a signal handler of the
 * same thread could want (a thread already inside the shim passes further calls through).
 *
 * Files, each calling only those listed after it (no two call each other):
 *   replay_calls.c, replay_ioctl.c, replay_env.c  the behaviour (beh_*)
 *   replay_init.c   start-up (the answer table, the shared state and the log, mapped and checked)
 *                   and fork
 *   replay_match.c  which recorded call answers a live one
 *   fake_gpu.c      the minimal GPU: channels, host methods
 *   gpu_mem.c       its memory: CPU mappings, GPU ranges, video memory
 *   copy_engine.c   copy-class methods: copies, fills, their semaphores (no shim calls)
 *   launch.c        compute-class methods, launches completed without execution (no shim calls)
 *   vidmem.c        video memory's backing (no shim calls)
 *   replay_log.c    the log of replayed calls
 *   replay_core.c   the run's state: device paths and fds, the handle map
 */
#ifndef CUDATOOL_REPLAY_SHIM_H
#define CUDATOOL_REPLAY_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "../../record/preload/hooks.h"
#include "../../record/shim_abi/replay_abi.h"
#include "../../record/shim_rt/shim_rt.h"
#include "../../rm/nv_ioctl_abi.h"

#define RS_HIDDEN RT_HIDDEN

/* ---- per thread (the runtime's rt_t has the busy flag, the tid, the stack) ---- */
struct rs_tls {
  int role; /* -1: not yet assigned */
  int role_pid;
};
RS_HIDDEN extern __thread struct rs_tls rs_t __attribute__((tls_model("initial-exec")));

/* ---- the run ---- */
struct rs_run {
  const struct rp_table* t;
  struct rp_state* st;
  uint8_t* answered; /* st + sizeof(struct rp_state): one byte per recorded event */
  struct rp_log_head* log;
  const char* root;
  const char* env_globs;
};
RS_HIDDEN extern struct rs_run rs; /* set once by the start (replay_init.c) */

/* Whether the shim started and answers (replay_init.c): the files mapped and of our version. */
RS_HIDDEN int rs_ready(void);

static inline void rs_progress(void) {
  __atomic_fetch_add(&rs.st->progress, 1, __ATOMIC_RELAXED);
}

static inline const char* rs_str(uint32_t off) {
  return (const char*)rs.t + rs.t->off_strings + off;
}
static inline const struct rp_event* rs_event(uint32_t i) {
  return (const struct rp_event*)((const char*)rs.t + rs.t->off_events) + i;
}
static inline const char* rs_path(int idx) {
  return rs_str(((const uint32_t*)((const char*)rs.t + rs.t->off_paths))[idx]);
}

/* Device paths: the index of an absolute path in the table, -1 when it is not a device. */
RS_HIDDEN int rs_device_index(const char* abs);

/* Device fds of this process (replay_core.c), also in the shared state for an exec'd image. */
RS_HIDDEN int rs_fd_path(int fd); /* path index, -1 */
RS_HIDDEN void rs_fd_set(int fd, int path, int cloexec);
RS_HIDDEN void rs_fd_clear(int fd);
/* At start: the device fds this process kept across exec (not close-on-exec, still sockets). */
RS_HIDDEN void rs_fds_restore(void);
/* In a forked child: its device fds, for an exec it may make. */
RS_HIDDEN void rs_fds_share_all(void);

/* Handles: the recorded handle a live one stands for. */
RS_HIDDEN uint32_t rs_handle(uint32_t live);
RS_HIDDEN void rs_bind_handle(uint32_t live, uint32_t recorded);

/* Memory of this process, read without faulting (rt_write writes). */
static inline uint64_t rs_read(uint64_t addr, void* dst, uint64_t n) {
  return rt_read(addr, dst, n, 0, NULL);
}

/* Matching (replay_match.c). */
struct rs_match {
  int event;   /* answer table index, -1 */
  int outcome; /* enum rp_outcome */
};
RS_HIDDEN struct rs_match rs_match(const struct rp_ident* id, int twin_ok, uint32_t digest);
RS_HIDDEN const struct rp_escape* rs_escape(uint32_t nr, uint32_t size);
RS_HIDDEN const struct rp_uvm* rs_uvm(uint32_t nr);
RS_HIDDEN int32_t rs_class_size(uint32_t cls);
RS_HIDDEN int rs_is_channel_class(uint32_t cls);

/* Log (replay_log.c): a record is reserved, filled, then committed. */
struct rs_rec {
  struct rp_log_rec* r;
  uint8_t* next; /* where the next buffer goes */
  uint8_t* end;
  uint32_t sys;
};
RS_HIDDEN int rs_log_begin(struct rs_rec* w, uint32_t sys, uint64_t payload);
/* Adds a buffer: pre bytes copied now from the live memory; returns it for rs_log_post. */
RS_HIDDEN struct rp_log_buf* rs_log_buf(struct rs_rec* w, uint16_t role, uint32_t ptr_off,
                                        uint64_t addr, uint32_t size);
RS_HIDDEN void rs_log_post(struct rp_log_buf* b);
RS_HIDDEN void rs_log_text(struct rs_rec* w, const char* s);
RS_HIDDEN void rs_log_bytes(struct rs_rec* w, const void* p, uint64_t n);
/* Logs an open of a file that holds a CUDA image (RP_LOG_IMAGE), read through the new fd. */
RS_HIDDEN void rs_log_cuda_image(int fd, const char* abs);
RS_HIDDEN void rs_log_commit(struct rs_rec* w);

/* Environment (replay_env.c). */
RS_HIDDEN int rs_env_redirect(const char* abs, char* out, size_t cap); /* 1: out is the new path */
RS_HIDDEN const struct rp_env* rs_env_device(const char* abs);
RS_HIDDEN void rs_fill_stat(void* st, const struct rp_env* e);

/* Fake GPU (fake_gpu.c). */
/* An mmap the replay handed out: of device `path` through `fd` at file offset `off`. */
RS_HIDDEN void rs_gpu_mmap(int path, int fd, uint64_t off, uint64_t cpu, uint64_t len);
/* Performs the munmap of a device mapping and forgets it, with the fake GPU held off. */
RS_HIDDEN long rs_gpu_munmap(struct shim_call* c, uint64_t cpu, uint64_t len, int* err);
/* Whether [cpu, cpu + len) overlaps a mapping the replay handed out; its device path in *path. */
RS_HIDDEN int rs_gpu_munmap_query(uint64_t cpu, uint64_t len, int* path);
/* Runs the fake GPU once (channels with new work); called from answered calls. */
RS_HIDDEN void rs_gpu_poke(void);
/* An answered NV_ESC_RM_MAP_MEMORY: the next mmap of `fd` (-1: not known) shows h_memory. */
RS_HIDDEN void rs_gpu_map_memory(uint32_t h_memory, uint64_t offset, uint64_t length,
                                 uint64_t linear, int fd);
/* An answered allocation of memory the program owns (an OS descriptor): h shows [cpu, cpu+len). */
RS_HIDDEN void rs_gpu_os_memory(uint32_t h, uint64_t cpu, uint64_t len);
RS_HIDDEN void rs_gpu_map_dma(uint32_t h_memory, uint64_t offset, uint64_t length, uint64_t gpu_va);
RS_HIDDEN void rs_gpu_map_external(uint32_t h_memory, uint64_t offset, uint64_t length,
                                   uint64_t gpu_va);
RS_HIDDEN void rs_gpu_channel(uint32_t h_channel, uint32_t cls, const uint8_t* params,
                              uint64_t len);
RS_HIDDEN void rs_gpu_free(uint32_t handle);
RS_HIDDEN void rs_gpu_atfork_child(void);

#endif /* CUDATOOL_REPLAY_SHIM_H */
