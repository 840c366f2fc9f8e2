/*
 * The shim runtime: what both preload shims (libcudatool_preload.so, the recording behaviour in
 * src/record/preload/; libcudatool_replay.so, the replaying behaviour in src/replay/shim/) are
 * built on, below the interposition layer (src/record/preload/hooks.h) and the behaviours.
 *
 * A shim runs inside arbitrary programs (PyTorch, …) and is called from the functions it
 * interposes (open, ioctl, mmap, …), from signal handlers and from forked children, so it is
 * plain C with no C++ runtime, and this runtime gives it:
 *   - raw system calls through the `syscall` instruction (never through the functions a shim
 *     interposes; they return -errno);
 *   - a per-thread state (initial-exec TLS): the `busy` flag that keeps a thread already inside
 *     the shim (a signal handler that interrupted it) out of it again, the cached tid, the
 *     thread's stack mapping, per-thread scratch memory (mmap, never malloc);
 *   - a spin lock for data that no signal handler of the holding thread touches (callers hold
 *     `busy`, or the data is never reached from a handler);
 *   - the clock, the pid (kept current across fork);
 *   - reads and writes of a process's memory that never fault (process_vm_readv/writev, page by
 *     page; the calling thread's own stack by plain copies);
 *   - an fd table (fd → a small index + 1, lock-free);
 *   - the start-up state machine (one start per program image, however many threads race to the
 *     first call);
 *   - absolute paths as a *at() call names them, and the mapping of /proc/self/maps that holds
 *     an address.
 *
 * It calls nothing of the layers above it: what it needs of them (the start function, limits) is
 * passed in as parameters. Function recording (issue #31) belongs here too when it comes: its
 * per-thread call stack goes into struct rt_tls, its code patching uses rt_sys6 (mprotect,
 * mmap of trampolines) and the `busy` flag keeps the shim's own calls out of the record.
 */
#ifndef CUDATOOL_SHIM_RT_H
#define CUDATOOL_SHIM_RT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#define RT_HIDDEN __attribute__((visibility("hidden")))

/* ---- raw system calls: return -errno on failure ---- */
static inline long rt_sys6(long n, long a1, long a2, long a3, long a4, long a5, long a6) {
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
#define RT_SYS(n, a, b, c) rt_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
/* Whether a raw result is an error (mmap's addresses are large but not in [-4095, -1]). */
#define RT_FAILED(r) ((r) < 0 && (r) > -4096)

/* ---- per-thread state ---- */
#define RT_SCRATCH_SLOTS 2
struct rt_tls {
  int busy; /* inside the shim: further calls of this thread pass through (signal handlers) */
  int tid;  /* cached gettid() */
  uint64_t stack_lo, stack_hi; /* the mapping that holds this thread's stack */
  int stack_probes;            /* /proc/self/maps reads for it (bounded) */
  uint8_t* scratch[RT_SCRATCH_SLOTS];
  size_t scratch_cap[RT_SCRATCH_SLOTS];
};
RT_HIDDEN extern __thread struct rt_tls rt_t __attribute__((tls_model("initial-exec")));
RT_HIDDEN extern int rt_pid; /* getpid(), kept current in forked children by rt_forked_child */

static inline int rt_tid(void) {
  if (rt_t.tid == 0) rt_t.tid = (int)RT_SYS(SYS_gettid, 0, 0, 0);
  return rt_t.tid;
}

/* CLOCK_MONOTONIC in ns (the vDSO's clock_gettime: not interposed). */
static inline uint64_t rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void rt_count(uint64_t* counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* ---- lock: a word (0 free, 1 held) that may lie in memory shared between processes ---- */
static inline void rt_lock(uint32_t* l) {
  for (unsigned spins = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) != 0; ++spins) {
    if (spins < 64) {
      __builtin_ia32_pause();
    } else {
      RT_SYS(SYS_sched_yield, 0, 0, 0);
    }
  }
}
static inline void rt_unlock(uint32_t* l) {
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- start-up: once per program image ---- */
enum { RT_UNINIT = 0, RT_STARTING = 1, RT_READY = 2, RT_OFF = 3 };
struct rt_once {
  _Atomic int state;
};
/* Whether the caller is the one to start (UNINIT → STARTING); it then calls rt_once_done. */
static inline int rt_once_claim(struct rt_once* o) {
  int expected = RT_UNINIT;
  return atomic_compare_exchange_strong(&o->state, &expected, RT_STARTING);
}
static inline void rt_once_done(struct rt_once* o, int ready) {
  atomic_store_explicit(&o->state, ready ? RT_READY : RT_OFF, memory_order_release);
}
/* Whether the shim is started and on: runs `start` (which claims and finishes `o`) when no one
 * has yet; a thread that finds another one starting gets 0 (its call passes through). */
static inline int rt_once_ready(struct rt_once* o, void (*start)(void)) {
  int s = atomic_load_explicit(&o->state, memory_order_acquire);
  if (s == RT_READY) return 1;
  if (s == RT_UNINIT) start();
  return atomic_load_explicit(&o->state, memory_order_acquire) == RT_READY;
}

/* The runtime's own start (pid, the per-thread scratch's destructor): from a behaviour's start. */
RT_HIDDEN void rt_start(void);
/* In a forked child, before anything else of the behaviour's atfork child handler: the pid, the
 * tid of the one thread. Returns the parent's pid. */
RT_HIDDEN int rt_forked_child(void);

/* ---- memory of a process, without faulting ---- */

/* Copies n bytes between `local` and [addr, addr + n) of process `pid` (write: into it), page by
 * page, stopping at the first page that cannot be copied; returns how many were. *err (when not
 * NULL): 0, or the errno of the stop (EFAULT for a page the kernel would not copy). */
RT_HIDDEN uint64_t rt_vm_copy(int pid, int write, uint64_t addr, void* local, uint64_t n, int* err);
/* Reads n bytes at addr of this process. `bounded`: a read that stops early is an answer (the
 * bytes up to the end of this thread's stack are taken as they are). Returns the bytes read. */
RT_HIDDEN uint64_t rt_read(uint64_t addr, void* dst, uint64_t n, int bounded, int* err);
RT_HIDDEN uint64_t rt_write(uint64_t addr, const void* src, uint64_t n);
/* The mapping that holds this thread's stack pointer `sp` (cached per thread). */
RT_HIDDEN int rt_stack_range(uint64_t sp, uint64_t* lo, uint64_t* hi);
/* The mapping of /proc/self/maps that holds `addr` (read every time). */
RT_HIDDEN int rt_maps_find(uint64_t addr, uint64_t* lo, uint64_t* hi);

/* Per-thread memory of at least n bytes in `slot` (< RT_SCRATCH_SLOTS); `keep` preserves what
 * the slot held (it may move). Freed when the thread ends; NULL when it cannot be mapped. */
RT_HIDDEN uint8_t* rt_scratch(int slot, size_t n, int keep);
/* Gives back slots grown past `keep_bytes` (after a call with huge buffers). */
RT_HIDDEN void rt_scratch_trim(size_t keep_bytes);

/* ---- fd table: fd → index (a device path's), lock-free ---- */
#define RT_MAX_FD 65536 /* fds at or above it are not followed */
struct rt_fd_table {
  _Atomic uint16_t idx1[RT_MAX_FD]; /* index + 1; 0: none */
};
static inline int rt_fd_get(const struct rt_fd_table* t, int fd) {
  if (fd < 0 || fd >= RT_MAX_FD) return -1;
  return (int)atomic_load_explicit(&t->idx1[fd], memory_order_relaxed) - 1;
}
/* idx -1 clears. */
static inline void rt_fd_put(struct rt_fd_table* t, int fd, int idx) {
  if (fd >= 0 && fd < RT_MAX_FD) {
    atomic_store_explicit(&t->idx1[fd], (uint16_t)(idx + 1), memory_order_relaxed);
  }
}

/* ---- paths ---- */

/* `path` relative to `dirfd` (AT_FDCWD: the working directory) as an absolute path in abs[cap]
 * (cap at most PATH_MAX), "." and ".." folded textually (as the ptrace recorder does,
 * devices.cpp absolute_path). 0 when it cannot be formed (NULL, too long, a bad dirfd). */
RT_HIDDEN int rt_path_absolute(int dirfd, const char* path, char* abs, size_t cap);

#endif /* CUDATOOL_SHIM_RT_H */
