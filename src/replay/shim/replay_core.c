/* The replay shim's state: start-up (the answer table, the shared state and the log, mapped from
 * the files cudatool made), device fds, the handle map, safe memory access, time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "../../record/preload/shim_path.h"
#include "replay_shim.h"

__thread struct rs_tls rs_t __attribute__((tls_model("initial-exec"))) = {0, 0, -1, 0, 0, 0, 0};
struct rs_run rs;

enum { kUninit = 0, kIniting = 1, kReady = 2, kOff = 3 };
static _Atomic int state = kUninit;

void rs_lock(uint32_t* l) {
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) != 0) {
    RS_SYS(SYS_sched_yield, 0, 0, 0);
  }
}
void rs_unlock(uint32_t* l) {
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

int rs_tid(void) {
  if (rs_t.tid == 0) rs_t.tid = (int)RS_SYS(SYS_gettid, 0, 0, 0);
  return rs_t.tid;
}

uint64_t rs_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void rs_progress(void) {
  __atomic_fetch_add(&rs.st->progress, 1, __ATOMIC_RELAXED);
}

/* ---- paths ---- */

int rs_absolute(int dirfd, const char* path, char* abs, size_t cap) {
  return shim_path_absolute(dirfd, path, abs, cap);
}

int rs_device_index(const char* abs) {
  for (uint32_t i = 0; i < rs.t->n_paths; ++i) {
    if (strcmp(rs_path((int)i), abs) == 0) return (int)i;
  }
  return -1;
}

/* ---- device fds ---- */

#define MAX_FD 65536
static _Atomic uint16_t fd_path[MAX_FD]; /* path index + 1 */

int rs_fd_path(int fd) {
  if (fd < 0 || fd >= MAX_FD) return -1;
  return (int)atomic_load_explicit(&fd_path[fd], memory_order_relaxed) - 1;
}

/* The shared table: so that an exec'd image of this process knows its device fds. */
static void share_fd(int fd, int path, int cloexec) {
  struct rp_state* st = rs.st;
  rs_lock(&st->lock);
  int free_slot = -1, done = 0;
  for (int i = 0; i < RP_MAX_FDS && !done; ++i) {
    struct rp_fd_entry* e = &st->fds[i];
    if (e->pid == rs.pid && e->fd == fd) {
      if (path < 0) {
        e->pid = 0;
      } else {
        e->path = path;
        e->cloexec = cloexec;
      }
      done = 1;
    } else if (e->pid == 0 && free_slot < 0) {
      free_slot = i;
    }
  }
  if (!done && path >= 0 && free_slot >= 0) {
    st->fds[free_slot] = (struct rp_fd_entry){rs.pid, fd, path, cloexec};
  }
  rs_unlock(&st->lock);
}

void rs_fd_set(int fd, int path, int cloexec) {
  if (fd < 0 || fd >= MAX_FD) return;
  atomic_store_explicit(&fd_path[fd], (uint16_t)(path + 1), memory_order_relaxed);
  share_fd(fd, path, cloexec);
}

void rs_fd_clear(int fd) {
  if (fd < 0 || fd >= MAX_FD || rs_fd_path(fd) < 0) return;
  atomic_store_explicit(&fd_path[fd], 0, memory_order_relaxed);
  share_fd(fd, -1, 0);
}

/* After exec: the device fds this process still has (not close-on-exec, still sockets). */
static void restore_fds(void) {
  struct rp_state* st = rs.st;
  rs_lock(&st->lock);
  for (int i = 0; i < RP_MAX_FDS; ++i) {
    struct rp_fd_entry* e = &st->fds[i];
    if (e->pid != rs.pid) continue;
    struct stat sb;
    long r = RS_SYS(SYS_fstat, e->fd, &sb, 0);
    if (e->cloexec || r != 0 || !S_ISSOCK(sb.st_mode) || e->fd < 0 || e->fd >= MAX_FD) {
      e->pid = 0;
      continue;
    }
    atomic_store_explicit(&fd_path[e->fd], (uint16_t)(e->path + 1), memory_order_relaxed);
  }
  rs_unlock(&st->lock);
}

/* ---- handles: live -> recorded ---- */

#define HMAP_SIZE (1u << 15)
static _Atomic uint64_t hmap[HMAP_SIZE]; /* live << 32 | recorded; 0 empty */
static uint32_t hmap_lock;

static uint32_t hslot(uint32_t h) {
  return (uint32_t)(rp_mix(0, h) & (HMAP_SIZE - 1));
}

uint32_t rs_handle(uint32_t live) {
  if (live == 0) return 0;
  for (uint32_t i = hslot(live), k = 0; k < HMAP_SIZE; ++k, i = (i + 1) & (HMAP_SIZE - 1)) {
    uint64_t v = atomic_load_explicit(&hmap[i], memory_order_acquire);
    if (v == 0) return live;
    if ((uint32_t)(v >> 32) == live) return (uint32_t)v;
  }
  return live;
}

void rs_bind_handle(uint32_t live, uint32_t recorded) {
  if (live == 0) return;
  rs_lock(&hmap_lock);
  for (uint32_t i = hslot(live), k = 0; k < HMAP_SIZE; ++k, i = (i + 1) & (HMAP_SIZE - 1)) {
    uint64_t v = atomic_load_explicit(&hmap[i], memory_order_relaxed);
    if (v == 0 || (uint32_t)(v >> 32) == live) {
      if (v == 0 && recorded == live) break; /* identity: nothing to remember */
      atomic_store_explicit(&hmap[i], (uint64_t)live << 32 | recorded, memory_order_release);
      break;
    }
  }
  rs_unlock(&hmap_lock);
}

/* ---- memory ---- */

/* The mapping that holds this thread's stack (from /proc/self/maps, a few times per thread). */
static int find_stack(uint64_t sp) {
  if (rs_t.stack_hi != 0 && sp >= rs_t.stack_lo && sp < rs_t.stack_hi) return 1;
  if (rs_t.stack_probes >= 8) return 0;
  ++rs_t.stack_probes;
  uint64_t lo = 0, hi = 0;
  if (!shim_maps_find(sp, &lo, &hi)) return 0;
  rs_t.stack_lo = lo;
  rs_t.stack_hi = hi;
  return 1;
}

/* How many bytes at addr lie in [sp, top of this thread's stack): plain memory access is safe. */
static uint64_t on_stack(uint64_t addr, uint64_t n) {
  volatile char here = 0;
  uint64_t sp = (uint64_t)(uintptr_t)&here;
  if (addr >= sp && find_stack(sp) && addr < rs_t.stack_hi && n <= rs_t.stack_hi - addr) return n;
  return 0;
}

static uint64_t vm_copy(int write, uint64_t addr, void* local, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    struct iovec remote[64];
    int k = 0;
    uint64_t a = addr + done, left = n - done, planned = 0;
    while (k < 64 && left > 0) {
      uint64_t take = 4096 - (a % 4096);
      if (take > left) take = left;
      remote[k].iov_base = (void*)(uintptr_t)a;
      remote[k].iov_len = take;
      ++k;
      a += take;
      left -= take;
      planned += take;
    }
    struct iovec l = {(char*)local + done, planned};
    long r = rs_sys6(write ? SYS_process_vm_writev : SYS_process_vm_readv, rs.pid, (long)&l, 1,
                     (long)remote, k, 0);
    if (r <= 0) break;
    done += (uint64_t)r;
    if ((uint64_t)r < planned) break;
  }
  return done;
}

uint64_t rs_read(uint64_t addr, void* dst, uint64_t n) {
  if (n == 0 || addr == 0 || addr + n < addr) return 0;
  if (on_stack(addr, n)) {
    memcpy(dst, (const void*)(uintptr_t)addr, n);
    return n;
  }
  return vm_copy(0, addr, dst, n);
}

uint64_t rs_write(uint64_t addr, const void* src, uint64_t n) {
  if (n == 0 || addr == 0 || addr + n < addr) return 0;
  if (on_stack(addr, n)) {
    memcpy((void*)(uintptr_t)addr, src, n);
    return n;
  }
  return vm_copy(1, addr, (void*)src, n);
}

/* ---- start-up ---- */

static void* map_file(const char* path, int writable, uint64_t* size) {
  long fd = RS_SYS(SYS_open, path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
  if (fd < 0) return NULL;
  struct stat sb;
  void* p = NULL;
  if (RS_SYS(SYS_fstat, fd, &sb, 0) == 0 && sb.st_size > 0) {
    long m = rs_sys6(SYS_mmap, 0, sb.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                     writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (m > 0 || m < -4095) {
      p = (void*)m;
      *size = (uint64_t)sb.st_size;
    }
  }
  RS_SYS(SYS_close, fd, 0, 0);
  return p;
}

static void log_exec(void) {
  const char* fn = (const char*)getauxval(AT_EXECFN);
  if (fn == NULL) fn = "";
  struct rs_rec w;
  if (!rs_log_begin(&w, RP_LOG_EXEC, strlen(fn) + 1)) return;
  rs_log_text(&w, fn);
  rs_log_commit(&w);
}

static void atfork_child(void) {
  int parent = rs.pid;
  int parent_tid = rs_t.tid;
  rs.pid = (int)RS_SYS(SYS_getpid, 0, 0, 0);
  rs_t.tid = rs.pid;
  rs_t.role = -1;
  rs_t.stack_lo = rs_t.stack_hi = 0;
  rs_t.stack_probes = 0;
  if (state != kReady) return;
  __atomic_fetch_add(&rs.st->processes, 1, __ATOMIC_RELAXED);
  /* The child's device fds, for an exec it may make. */
  for (int fd = 0; fd < MAX_FD; ++fd) {
    int p = rs_fd_path(fd);
    if (p < 0) continue;
    long fl = RS_SYS(SYS_fcntl, fd, F_GETFD, 0);
    share_fd(fd, p, fl >= 0 && (fl & FD_CLOEXEC));
  }
  rs_gpu_atfork_child();
  struct rs_rec w;
  if (rs_log_begin(&w, RP_LOG_FORK, 0)) {
    w.r->pid = parent;
    w.r->tid = parent_tid;
    w.r->child = rs.pid;
    w.r->ret = rs.pid;
    rs_log_commit(&w);
  }
}

static void init(void) {
  int expected = kUninit;
  if (!atomic_compare_exchange_strong(&state, &expected, kIniting)) return;
  const char* tp = getenv(RP_ENV_TABLE);
  const char* sp = getenv(RP_ENV_STATE);
  const char* lp = getenv(RP_ENV_LOG);
  uint64_t tsize = 0, ssize = 0, lsize = 0;
  const struct rp_table* t = tp ? map_file(tp, 0, &tsize) : NULL;
  struct rp_state* st = sp ? map_file(sp, 1, &ssize) : NULL;
  struct rp_log_head* lg = lp ? map_file(lp, 1, &lsize) : NULL;
  if (t == NULL || st == NULL || lg == NULL || tsize < sizeof *t || t->magic != RP_TABLE_MAGIC ||
      t->version != RP_VERSION || t->size != tsize || st->magic != RP_STATE_MAGIC ||
      ssize < sizeof *st + t->n_events || lg->magic != RP_LOG_MAGIC || lg->capacity > lsize) {
    atomic_store(&state, kOff);
    return;
  }
  rs.t = t;
  rs.st = st;
  rs.answered = (uint8_t*)st + sizeof *st;
  rs.log = lg;
  rs.root = rs_str(t->root);
  rs.env_globs = rs_str(t->env_globs);
  rs.pid = (int)RS_SYS(SYS_getpid, 0, 0, 0);
  restore_fds();
  pthread_atfork(NULL, NULL, atfork_child);
  __atomic_fetch_add(&st->processes, 1, __ATOMIC_RELAXED);
  atomic_store_explicit(&state, kReady, memory_order_release);
  log_exec();
}

int rs_ready(void) {
  int s = atomic_load_explicit(&state, memory_order_acquire);
  if (s == kReady) return 1;
  if (s == kUninit) init();
  return atomic_load_explicit(&state, memory_order_acquire) == kReady;
}

__attribute__((constructor)) static void rs_constructor(void) {
  init();
}
