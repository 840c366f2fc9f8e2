/* The preload shim's state: start-up, fd and mapping tables, safe memory reads, output. */
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

#include "../../base/glob_match.h"
#include "shim.h"
#include "shim_path.h"

__thread struct shim_tls shim_t __attribute__((tls_model("initial-exec")));
struct cudatool_preload_ctl* shim_ctl;
int shim_pid;

enum { kUninit = 0, kIniting = 1, kReady = 2, kOff = 3 };
static _Atomic int state = kUninit;

static char trace_path[PATH_MAX];
static char devices[2048];
static char env_globs[2048]; /* --env: environment paths whose calls are recorded ("" none) */
static uint64_t t0_ns;
static uint64_t max_buffer = NVTR_MAX_BUFFER;
static const struct nvtr_uvm_branch* uvm_branch;
static const struct nvtr_rm_branch* rm_branch;
static pthread_key_t scratch_key;

/* fd -> device path index + 1 (0: not a device). fds above the table are not followed. */
#define MAX_FD 65536
static _Atomic uint8_t fd_dev[MAX_FD];
#define MAX_PATHS 255
static char paths[MAX_PATHS][256];
static int path_kinds[MAX_PATHS];
static _Atomic int npaths;
static atomic_flag paths_lock = ATOMIC_FLAG_INIT;

#define MAX_MAPS 4096
struct map {
  uint64_t addr, len;
  int idx;
};
static struct map maps[MAX_MAPS];
static int nmaps;
static atomic_flag maps_lock = ATOMIC_FLAG_INIT;

#define MAX_WINDOWS 16384 /* x CUDATOOL_PRELOAD_CHUNK: 1 TiB of trace */
static char* _Atomic windows[MAX_WINDOWS];

static void lock(atomic_flag* f) {
  while (atomic_flag_test_and_set_explicit(f, memory_order_acquire)) {
  }
}
static void unlock(atomic_flag* f) {
  atomic_flag_clear_explicit(f, memory_order_release);
}

void shim_count(uint64_t* counter) {
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

int shim_tid(void) {
  if (shim_t.tid == 0) shim_t.tid = (int)SHIM_SYS(SYS_gettid, 0, 0, 0);
  return shim_t.tid;
}

uint64_t shim_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t n = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
  return n > t0_ns ? n - t0_ns : 0;
}

/* ---- tables ---- */

int shim_dev_of_fd(int fd) {
  if (fd < 0 || fd >= MAX_FD) return -1;
  return (int)atomic_load_explicit(&fd_dev[fd], memory_order_relaxed) - 1;
}
void shim_fd_set(int fd, int idx) {
  if (fd >= 0 && fd < MAX_FD)
    atomic_store_explicit(&fd_dev[fd], (uint8_t)(idx + 1), memory_order_relaxed);
}
void shim_fd_clear(int fd) {
  if (fd >= 0 && fd < MAX_FD) atomic_store_explicit(&fd_dev[fd], 0, memory_order_relaxed);
}
const char* shim_path(int idx) {
  return paths[idx];
}
int shim_path_kind(int idx) {
  return path_kinds[idx];
}

static int intern(const char* abs) {
  size_t n = strlen(abs);
  if (n >= sizeof paths[0]) return -1;
  lock(&paths_lock);
  int count = atomic_load(&npaths), found = -1;
  for (int i = 0; i < count && found < 0; ++i) {
    if (strcmp(paths[i], abs) == 0) found = i;
  }
  if (found < 0 && count < MAX_PATHS) {
    memcpy(paths[count], abs, n + 1);
    path_kinds[count] = nvtr_dev_kind_of_path(abs);
    atomic_store(&npaths, count + 1);
    found = count;
  }
  unlock(&paths_lock);
  return found;
}

int shim_abs_path(int dirfd, const char* path, char* abs) {
  return shim_path_absolute(dirfd, path, abs, PATH_MAX);
}

int shim_device_path(int dirfd, const char* path, char* abs, int* idx) {
  if (path == NULL || devices[0] == '\0') return 0;
  if (!shim_abs_path(dirfd, path, abs)) return 0;
  if (!nvtr_glob_list_match(devices, abs)) return 0;
  *idx = intern(abs);
  return *idx >= 0;
}

int shim_env_on(void) {
  return env_globs[0] != '\0';
}

int shim_env_match(const char* abs) {
  return nvtr_glob_list_match(env_globs, abs);
}

int shim_device_match(const char* abs, int* idx) {
  if (devices[0] == '\0' || !nvtr_glob_list_match(devices, abs)) return 0;
  *idx = intern(abs);
  return *idx >= 0;
}

void shim_map_add(uint64_t addr, uint64_t len, int idx) {
  lock(&maps_lock);
  if (nmaps < MAX_MAPS) maps[nmaps++] = (struct map){addr, len, idx};
  unlock(&maps_lock);
}

int shim_map_overlaps(uint64_t addr, uint64_t len) {
  int hit = 0;
  if (nmaps == 0) return 0;
  lock(&maps_lock);
  for (int i = 0; i < nmaps && !hit; ++i) {
    hit = addr < maps[i].addr + maps[i].len && maps[i].addr < addr + len;
  }
  unlock(&maps_lock);
  return hit;
}

int shim_map_remove(uint64_t addr, uint64_t len) {
  int first = -1;
  uint64_t end = addr + len;
  lock(&maps_lock);
  for (int i = 0; i < nmaps; ++i) {
    struct map m = maps[i];
    uint64_t mend = m.addr + m.len;
    if (!(addr < mend && m.addr < end)) continue;
    if (first < 0) first = m.idx;
    /* Keep what lies outside [addr, end): at most a head and a tail. */
    maps[i] = maps[--nmaps];
    --i;
    if (m.addr < addr && nmaps < MAX_MAPS)
      maps[nmaps++] = (struct map){m.addr, addr - m.addr, m.idx};
    if (mend > end && nmaps < MAX_MAPS) maps[nmaps++] = (struct map){end, mend - end, m.idx};
  }
  unlock(&maps_lock);
  return first;
}

/* ---- memory ---- */

/* The mapping that holds the stack pointer, from /proc/self/maps (once per thread, and again
 * only a few times if the thread moves to another stack). */
static int find_stack(uint64_t sp) {
  if (shim_t.stack_hi != 0 && sp >= shim_t.stack_lo && sp < shim_t.stack_hi) return 1;
  if (shim_t.stack_probes >= 8) return 0;
  ++shim_t.stack_probes;
  uint64_t lo = 0, hi = 0;
  if (!shim_maps_find(sp, &lo, &hi)) return 0;
  shim_t.stack_lo = lo;
  shim_t.stack_hi = hi;
  return 1;
}

int shim_stack_range(uint64_t sp, uint64_t* lo, uint64_t* hi) {
  if (!find_stack(sp)) return 0;
  *lo = shim_t.stack_lo;
  *hi = shim_t.stack_hi;
  return 1;
}

uint64_t shim_read(uint64_t addr, uint8_t* dst, uint64_t n, int bounded, int* err) {
  *err = 0;
  if (n == 0) return 0;
  if (addr == 0 || addr + n < addr) {
    *err = EFAULT;
    return 0;
  }
  /* Fast path: [sp, top of this thread's stack mapping) is mapped and readable. */
  volatile char here = 0;
  uint64_t sp = (uint64_t)(uintptr_t)&here;
  if (addr >= sp && find_stack(sp) && addr < shim_t.stack_hi) {
    uint64_t avail = shim_t.stack_hi - addr;
    if (n <= avail || bounded) {
      uint64_t take = n <= avail ? n : avail;
      memcpy(dst, (const void*)(uintptr_t)addr, take);
      return take;
    }
  }
  /* Slow path: the kernel copies, page by page, and stops at the first unreadable page. */
  uint64_t got = 0;
  while (got < n) {
    struct iovec remote[64];
    int k = 0;
    uint64_t a = addr + got, left = n - got, planned = 0;
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
    struct iovec local = {dst + got, planned};
    long r = shim_sys6(SYS_process_vm_readv, shim_pid, (long)&local, 1, (long)remote, k, 0);
    if (r < 0) {
      *err = (int)-r;
      break;
    }
    got += (uint64_t)r;
    if ((uint64_t)r < planned) {
      *err = EFAULT;
      break;
    }
  }
  return got;
}

static void scratch_release(int slot) {
  if (shim_t.scratch[slot] != NULL) {
    SHIM_SYS(SYS_munmap, shim_t.scratch[slot], shim_t.scratch_cap[slot], 0);
  }
  shim_t.scratch[slot] = NULL;
  shim_t.scratch_cap[slot] = 0;
}

static void scratch_free(void* p) {
  (void)p;
  scratch_release(0);
  scratch_release(1);
}

uint8_t* shim_scratch(int slot, size_t n, int keep) {
  if (n <= shim_t.scratch_cap[slot]) return shim_t.scratch[slot];
  size_t cap = 1 << 16;
  while (cap < n) cap <<= 1;
  long p;
  if (shim_t.scratch[slot] != NULL && keep) {
    p = shim_sys6(SYS_mremap, (long)shim_t.scratch[slot], (long)shim_t.scratch_cap[slot], (long)cap,
                  MREMAP_MAYMOVE, 0, 0);
  } else {
    scratch_release(slot);
    p = shim_sys6(SYS_mmap, 0, (long)cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                  0);
  }
  if (p < 0 && p > -4096) {
    if (keep) scratch_release(slot);
    return NULL;
  }
  shim_t.scratch[slot] = (uint8_t*)p;
  shim_t.scratch_cap[slot] = cap;
  pthread_setspecific(scratch_key, shim_t.scratch[slot]); /* frees it when the thread ends */
  return shim_t.scratch[slot];
}

void shim_scratch_trim(void) {
  for (int slot = 0; slot < 2; ++slot) {
    if (shim_t.scratch_cap[slot] > (1u << 20)) scratch_release(slot);
  }
}

/* ---- output ---- */

static long open_trace(void) {
  return SHIM_SYS(SYS_open, trace_path, O_RDWR | O_CLOEXEC, 0);
}

/* Makes the file at least `end` bytes long (in whole chunks; never shrinks it). */
static int ensure_size(uint64_t end) {
  uint64_t ext = __atomic_load_n(&shim_ctl->extended_to, __ATOMIC_ACQUIRE);
  while (ext < end) {
    uint64_t want =
        (end + CUDATOOL_PRELOAD_CHUNK - 1) / CUDATOOL_PRELOAD_CHUNK * CUDATOOL_PRELOAD_CHUNK;
    long fd = open_trace();
    if (fd < 0) return -1;
    long r = shim_sys6(SYS_fallocate, fd, 0, (long)ext, (long)(want - ext), 0, 0);
    if (r == -EOPNOTSUPP) {
      /* No fallocate here: grow with ftruncate, but only ever up. */
      struct stat st; /* glibc's x86-64 struct stat is the kernel's */
      if (SHIM_SYS(SYS_fstat, fd, &st, 0) == 0) {
        r = (uint64_t)st.st_size < want ? SHIM_SYS(SYS_ftruncate, fd, want, 0) : 0;
      }
    }
    SHIM_SYS(SYS_close, fd, 0, 0);
    if (r < 0) return -1;
    __atomic_compare_exchange_n(&shim_ctl->extended_to, &ext, want, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
    ext = __atomic_load_n(&shim_ctl->extended_to, __ATOMIC_ACQUIRE);
  }
  return 0;
}

static char* window(uint64_t i) {
  if (i >= MAX_WINDOWS) return NULL;
  char* w = atomic_load_explicit(&windows[i], memory_order_acquire);
  if (w != NULL) return w;
  long fd = open_trace();
  if (fd < 0) return NULL;
  long p = shim_sys6(SYS_mmap, 0, (long)CUDATOOL_PRELOAD_CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED,
                     fd, (long)(i * CUDATOOL_PRELOAD_CHUNK));
  SHIM_SYS(SYS_close, fd, 0, 0);
  if (p < 0 && p > -4096) return NULL;
  char* expected = NULL;
  if (!atomic_compare_exchange_strong(&windows[i], &expected, (char*)p)) {
    SHIM_SYS(SYS_munmap, p, CUDATOOL_PRELOAD_CHUNK, 0);
    return expected;
  }
  return (char*)p;
}

/* Pages of the mapping are faulted in by the kernel in batches (MADV_POPULATE_WRITE) when a line
 * first reaches a new 256 KiB stretch, rather than one page fault per page as lines reach them. */
#define POPULATE_STEP (256u << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static void populate_ahead(uint64_t off, size_t n) {
  uint64_t first = off / POPULATE_STEP, last = (off + n) / POPULATE_STEP;
  if (first == last) return;
  uint64_t start = last * POPULATE_STEP;
  uint64_t ext = __atomic_load_n(&shim_ctl->extended_to, __ATOMIC_ACQUIRE);
  if (start >= ext) return;
  uint64_t len = ext - start < POPULATE_STEP ? ext - start : POPULATE_STEP;
  uint64_t i = start / CUDATOOL_PRELOAD_CHUNK, in = start % CUDATOOL_PRELOAD_CHUNK;
  if (in + len > CUDATOOL_PRELOAD_CHUNK) len = CUDATOOL_PRELOAD_CHUNK - in;
  char* w = window(i);
  if (w != NULL) SHIM_SYS(SYS_madvise, w + in, len, MADV_POPULATE_WRITE); /* best effort */
}

static void copy_out(uint64_t off, const char* src, size_t n) {
  populate_ahead(off, n);
  while (n > 0) {
    uint64_t i = off / CUDATOOL_PRELOAD_CHUNK, in = off % CUDATOOL_PRELOAD_CHUNK;
    size_t take = CUDATOOL_PRELOAD_CHUNK - in < n ? (size_t)(CUDATOOL_PRELOAD_CHUNK - in) : n;
    char* w = window(i);
    if (w == NULL) return;
    memcpy(w + in, src, take);
    off += take;
    src += take;
    n -= take;
  }
}

/* Reserves len bytes of the trace and copies the line (ending in '\n') in; 0 when it could not. */
static int write_line(const char* line, size_t len) {
  uint64_t off = __atomic_load_n(&shim_ctl->write_off, __ATOMIC_RELAXED);
  do {
    if (off & CUDATOOL_PRELOAD_CLOSED) return 0;
  } while (!__atomic_compare_exchange_n(&shim_ctl->write_off, &off, off + len, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
  if (ensure_size(off + len) != 0) return 0;
  /* The newline first: if the program dies during the copy, the partial line stays one line. */
  copy_out(off + len - 1, "\n", 1);
  copy_out(off, line, len - 1);
  return 1;
}

/* ---- stack records (v3) ----
 *
 * A stack seen before in this program image is named by the id of its record line instead of
 * being written again (libcuda makes most of its device calls from a few call paths). The table
 * is this image's (a forked child inherits it: the records it names are in the file already, and
 * its addresses are the parent's). A slot is claimed (EMPTY → FILLING) by the thread that first
 * sees a stack, and published (READY) only once the record line is in the trace, so an event
 * naming it always lies after it in the file. Whoever finds a slot FILLING waits a bounded while
 * (FILL_SPINS pauses, a few µs: writing a record line takes about one) for it to be published;
 * a slot still FILLING then, a table too full to take the stack, or a record it could not write
 * make the stack be written inline: never an unbounded wait, never a lock, safe in a signal
 * handler (the filler is always another thread: the shim's busy flag keeps a handler of the
 * filling thread out). A forked child, where the filler's thread does not exist, empties the
 * slots it inherited FILLING. */
#define STACK_SLOTS 4096 /* a power of two */
#define STACK_PROBES 32
#define FILL_SPINS 512
enum { kSlotEmpty, kSlotFilling, kSlotReady };
struct stack_slot {
  _Atomic uint32_t state;
  uint32_t n;
  uint64_t hash, id;
  uint64_t frames[SHIM_MAX_FRAMES];
};
static struct stack_slot stack_slots[STACK_SLOTS];

static uint64_t stack_hash(const uint64_t* f, int n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
  for (int i = 0; i < n; ++i) {
    h ^= f[i];
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  return h;
}

/* The record id naming ev's frames, writing the record first when the stack is new; 0: write it
 * inline. `tmp` holds at least SHIM_STACK_RECORD_BOUND(ev->nframes) bytes. */
static uint64_t stack_ref_of(const struct shim_event* ev, char* tmp) {
  int n = ev->nframes;
  uint64_t h = stack_hash(ev->frames, n);
  size_t bytes = (size_t)n * sizeof(uint64_t);
  int again = 0; /* looks at the same slot again: bounded, whatever other threads do */
  for (uint32_t k = 0; k < STACK_PROBES; ++k) {
    struct stack_slot* s = &stack_slots[(h + k) & (STACK_SLOTS - 1)];
    uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
    if (st == kSlotReady) {
      if (s->hash == h && s->n == (uint32_t)n && memcmp(s->frames, ev->frames, bytes) == 0) {
        return s->id;
      }
      continue;
    }
    if (st == kSlotFilling) {
      for (int i = 0; i < FILL_SPINS && st == kSlotFilling; ++i) {
        __builtin_ia32_pause();
        st = atomic_load_explicit(&s->state, memory_order_acquire);
      }
      if (st == kSlotFilling || ++again > 4) return 0;
      --k; /* published (or given up): look at it again */
      continue;
    }
    uint32_t want = kSlotEmpty;
    if (!atomic_compare_exchange_strong_explicit(&s->state, &want, kSlotFilling,
                                                 memory_order_acq_rel, memory_order_acquire)) {
      if (++again > 4) return 0;
      --k; /* another thread claimed it, or it became READY: look at it again */
      continue;
    }
    uint64_t id = __atomic_add_fetch(&shim_ctl->stack_ids, 1, __ATOMIC_RELAXED);
    size_t len = shim_format_stack_record(tmp, id, ev->frames, n);
    if (!write_line(tmp, len)) {
      atomic_store_explicit(&s->state, kSlotEmpty, memory_order_release);
      return 0;
    }
    s->n = (uint32_t)n;
    s->hash = h;
    s->id = id;
    memcpy(s->frames, ev->frames, bytes);
    atomic_store_explicit(&s->state, kSlotReady, memory_order_release);
    return id;
  }
  return 0;
}

void shim_emit(struct shim_event* ev) {
  size_t bound = shim_event_bound(ev);
  uint8_t* out = shim_scratch(1, bound, 0);
  if (out == NULL) {
    shim_count(&shim_ctl->lost);
    return;
  }
  /* bound covers a stack record: 640 + 24 per frame */
  ev->stack_ref = ev->nframes > 0 ? stack_ref_of(ev, (char*)out) : 0;
  uint64_t seq = __atomic_fetch_add(&shim_ctl->seq, 1, __ATOMIC_RELAXED);
  size_t len = shim_format_event((char*)out, seq, ev);
  if (!write_line((const char*)out, len)) {
    shim_count(&shim_ctl->lost);
    return;
  }
  shim_count(&shim_ctl->written);
}

void shim_emit_line(const char* line, size_t len) {
  if (len > 0 && line[len - 1] == '\n') write_line(line, len);
}

/* ---- start-up ---- */

static void map_ctl(const char* path) {
  long fd = SHIM_SYS(SYS_open, path, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return;
  long p = shim_sys6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  SHIM_SYS(SYS_close, fd, 0, 0);
  if (p < 0 && p > -4096) return;
  struct cudatool_preload_ctl* c = (struct cudatool_preload_ctl*)p;
  if (c->magic != CUDATOOL_PRELOAD_MAGIC) {
    SHIM_SYS(SYS_munmap, p, 4096, 0);
    return;
  }
  shim_ctl = c;
}

/* Device fds this image inherited (exec keeps fds that are not close-on-exec). */
static void scan_fds(void) {
  long dir = SHIM_SYS(SYS_open, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;
  char buf[4096];
  long n;
  while ((n = SHIM_SYS(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      unsigned short reclen;
      memcpy(&reclen, buf + off + 16, 2);
      const char* name = buf + off + 19;
      off += reclen;
      if (name[0] < '0' || name[0] > '9') continue;
      int fd = atoi(name);
      if (fd == (int)dir) continue;
      char link[64] = "/proc/self/fd/", target[PATH_MAX];
      strncat(link, name, sizeof link - 15);
      long t = SHIM_SYS(SYS_readlink, link, target, sizeof target - 1);
      if (t <= 0) continue;
      target[t] = '\0';
      int idx = -1;
      char abs[PATH_MAX];
      if (target[0] == '/' && shim_device_path(AT_FDCWD, target, abs, &idx)) shim_fd_set(fd, idx);
    }
  }
  SHIM_SYS(SYS_close, dir, 0, 0);
}

/* The tables' locks are held across fork so that the child's copies are consistent. Not when
 * fork is called by a signal handler that interrupted this thread inside the shim: it may hold
 * one of them already. */
static void atfork_prepare(void) {
  shim_t.fork_tid = shim_tid();
  shim_t.fork_locked = !shim_t.busy;
  if (shim_t.fork_locked) {
    lock(&paths_lock);
    lock(&maps_lock);
  }
}
static void atfork_parent(void) {
  if (shim_t.fork_locked) {
    unlock(&maps_lock);
    unlock(&paths_lock);
  }
}
static void atfork_child(void) {
  if (shim_t.fork_locked) {
    unlock(&maps_lock);
    unlock(&paths_lock);
    /* Other threads' claims died with them (this thread, not inside the shim, holds none). */
    for (int i = 0; i < STACK_SLOTS; ++i) {
      struct stack_slot* s = &stack_slots[i];
      if (atomic_load_explicit(&s->state, memory_order_relaxed) == kSlotFilling) {
        atomic_store_explicit(&s->state, kSlotEmpty, memory_order_relaxed);
      }
    }
  }
  int parent = shim_pid;
  shim_pid = (int)SHIM_SYS(SYS_getpid, 0, 0, 0);
  shim_t.tid = shim_pid;
  if (!shim_ready() || shim_t.busy) return;
  shim_t.busy = 1;
  struct shim_event ev;
  memset(&ev, 0, sizeof ev);
  ev.sys = SHIM_FORK;
  ev.t = shim_now();
  ev.pid = parent;
  ev.tid = shim_t.fork_tid;
  ev.child = shim_pid;
  ev.ret = shim_pid;
  shim_emit(&ev);
  shim_t.busy = 0;
}

int shim_ready(void) {
  int s = atomic_load_explicit(&state, memory_order_acquire);
  if (s == kReady) return 1;
  if (s == kUninit) shim_init();
  return atomic_load_explicit(&state, memory_order_acquire) == kReady;
}

void shim_init(void) {
  int expected = kUninit;
  if (!atomic_compare_exchange_strong(&state, &expected, kIniting)) return;
  const char* tp = getenv(CUDATOOL_ENV_TRACE);
  const char* cp = getenv(CUDATOOL_ENV_CTL);
  const char* dv = getenv(CUDATOOL_ENV_DEVICES);
  if (tp == NULL || cp == NULL || dv == NULL || strlen(tp) >= sizeof trace_path ||
      strlen(dv) >= sizeof devices) {
    atomic_store(&state, kOff);
    return;
  }
  memcpy(trace_path, tp, strlen(tp) + 1);
  memcpy(devices, dv, strlen(dv) + 1);
  const char* eg = getenv(CUDATOOL_ENV_ENV);
  if (eg != NULL && strlen(eg) < sizeof env_globs) memcpy(env_globs, eg, strlen(eg) + 1);
  map_ctl(cp);
  if (shim_ctl == NULL) {
    atomic_store(&state, kOff);
    return;
  }
  t0_ns = shim_ctl->t0_ns;
  if (shim_ctl->max_buffer != 0) max_buffer = shim_ctl->max_buffer;
  uvm_branch = nvtr_uvm_branch_for_major((int)shim_ctl->uvm_major);
  rm_branch = nvtr_rm_branch_for_major(uvm_branch->major);
  shim_pid = (int)SHIM_SYS(SYS_getpid, 0, 0, 0);
  pthread_key_create(&scratch_key, scratch_free);
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  scan_fds();
  shim_count(&shim_ctl->processes);
  atomic_store_explicit(&state, kReady, memory_order_release);
  /* This image was started by execve: record it as the ptrace recorder does. */
  shim_t.busy = 1;
  struct shim_event ev;
  memset(&ev, 0, sizeof ev);
  ev.sys = SHIM_EXECVE;
  ev.t = shim_now();
  ev.pid = shim_pid;
  ev.tid = shim_tid();
  const char* fn = (const char*)getauxval(AT_EXECFN);
  ev.path = fn != NULL ? fn : "";
  shim_emit(&ev);
  shim_t.busy = 0;
}

uint64_t shim_max_buffer(void) {
  return max_buffer;
}

const struct nvtr_uvm_branch* shim_uvm_branch(void) {
  return uvm_branch;
}

const struct nvtr_rm_branch* shim_rm_branch(void) {
  return rm_branch;
}

__attribute__((constructor)) static void shim_constructor(void) {
  shim_init();
}
