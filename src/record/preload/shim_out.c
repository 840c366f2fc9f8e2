/* The recording's output (shim.h): event lines and stack records, written into the trace file
 * that every shim of the recording maps MAP_SHARED (../shim_abi/preload_ctl.h: a writer reserves
 * its bytes through the control block, then copies its line in). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "shim.h"

/* ---- output ---- */

#define MAX_WINDOWS 16384 /* x CUDATOOL_PRELOAD_CHUNK: 1 TiB of trace */
static char* _Atomic windows[MAX_WINDOWS];

static long open_trace(void) {
  return SHIM_SYS(SYS_open, shim_trace_path(), O_RDWR | O_CLOEXEC, 0);
}

/* Makes the file at least `end` bytes long (in whole chunks; never shrinks it). */
static int ensure_size(uint64_t end) {
  uint64_t ext = __atomic_load_n(&shim_ctl->extended_to, __ATOMIC_ACQUIRE);
  while (ext < end) {
    uint64_t want =
        (end + CUDATOOL_PRELOAD_CHUNK - 1) / CUDATOOL_PRELOAD_CHUNK * CUDATOOL_PRELOAD_CHUNK;
    long fd = open_trace();
    if (fd < 0) return -1;
    long r = rt_sys6(SYS_fallocate, fd, 0, (long)ext, (long)(want - ext), 0, 0);
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
  long p = rt_sys6(SYS_mmap, 0, (long)CUDATOOL_PRELOAD_CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd, (long)(i * CUDATOOL_PRELOAD_CHUNK));
  SHIM_SYS(SYS_close, fd, 0, 0);
  if (RT_FAILED(p)) return NULL;
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
  uint8_t* out = rt_scratch(1, bound, 0);
  if (out == NULL) {
    shim_count(&shim_ctl->lost);
    return;
  }
  /* bound covers a stack record: 640 + 24 per frame */
  ev->stack_ref = ev->nframes > 0 ? stack_ref_of(ev, (char*)out) : 0;
  uint64_t seq = __atomic_fetch_add(&shim_ctl->seq, 1, __ATOMIC_RELAXED);
  size_t len = shim_format_event((char*)out, seq, ev, shim_max_buffer());
  if (!write_line((const char*)out, len)) {
    shim_count(&shim_ctl->lost);
    return;
  }
  shim_count(&shim_ctl->written);
}

void shim_emit_line(const char* line, size_t len) {
  if (len > 0 && line[len - 1] == '\n') write_line(line, len);
}

void shim_out_forked_child(void) {
  /* Other threads' claims died with them (the forking thread, not inside the shim, holds none). */
  for (int i = 0; i < STACK_SLOTS; ++i) {
    struct stack_slot* s = &stack_slots[i];
    if (atomic_load_explicit(&s->state, memory_order_relaxed) == kSlotFilling) {
      atomic_store_explicit(&s->state, kSlotEmpty, memory_order_relaxed);
    }
  }
}
