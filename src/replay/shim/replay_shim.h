/*
 * Internals of the replay shim (libcudatool_replay.so): the behaviour of the shared interposition
 * layer (src/record/preload/hooks.h) that answers a program's device calls from an answer table
 * (src/replay/replay_abi.h) instead of performing them, redirects the driver's view of the system
 * into a private directory tree, and plays a minimal GPU (fake_gpu.c).
 *
 * Plain C inside arbitrary programs, like the recording shim: its own system calls through the
 * `syscall` instruction, no allocation but mmap, no lock a signal handler of the same thread could
 * want (a thread already inside the shim passes further calls through).
 */
#ifndef CUDATOOL_REPLAY_SHIM_H
#define CUDATOOL_REPLAY_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "../../record/preload/hooks.h"
#include "../../record/shim_abi/replay_abi.h"
#include "../../rm/nv_ioctl_abi.h"

#define RS_HIDDEN __attribute__((visibility("hidden")))

static inline long rs_sys6(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
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
#define RS_SYS(n, a, b, c) rs_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* ---- per thread ---- */
struct rs_tls {
  int busy;
  int tid;
  int role; /* -1: not yet assigned */
  int role_pid;
  uint64_t stack_lo, stack_hi;
  int stack_probes;
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
  int pid;
};
RS_HIDDEN extern struct rs_run rs;

RS_HIDDEN int rs_ready(void);
RS_HIDDEN int rs_tid(void);
RS_HIDDEN uint64_t rs_now(void);
RS_HIDDEN void rs_lock(uint32_t* l);
RS_HIDDEN void rs_unlock(uint32_t* l);
RS_HIDDEN void rs_progress(void);

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
/* (dirfd, path) made absolute, "." and ".." folded; 0 when it cannot be. */
RS_HIDDEN int rs_absolute(int dirfd, const char* path, char* abs, size_t cap);

/* Device fds of this process. */
RS_HIDDEN int rs_fd_path(int fd); /* path index, -1 */
RS_HIDDEN void rs_fd_set(int fd, int path, int cloexec);
RS_HIDDEN void rs_fd_clear(int fd);

/* Handles: the recorded handle a live one stands for. */
RS_HIDDEN uint32_t rs_handle(uint32_t live);
RS_HIDDEN void rs_bind_handle(uint32_t live, uint32_t recorded);

/* Memory of this process, read and written without faulting. */
RS_HIDDEN uint64_t rs_read(uint64_t addr, void* dst, uint64_t n);
RS_HIDDEN uint64_t rs_write(uint64_t addr, const void* src, uint64_t n);

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
RS_HIDDEN void rs_gpu_map_dma(uint32_t h_memory, uint64_t offset, uint64_t length, uint64_t gpu_va);
RS_HIDDEN void rs_gpu_map_external(uint32_t h_memory, uint64_t offset, uint64_t length,
                                   uint64_t gpu_va);
RS_HIDDEN void rs_gpu_channel(uint32_t h_channel, uint32_t cls, const uint8_t* params,
                              uint64_t len);
RS_HIDDEN void rs_gpu_free(uint32_t handle);
RS_HIDDEN void rs_gpu_atfork_child(void);

#endif /* CUDATOOL_REPLAY_SHIM_H */
