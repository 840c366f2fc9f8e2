/* The function recorder's hooks: per-thread shadow stacks and the records they write
 * (funcrec.h, funcrec_abi.h). Built with -mgeneral-regs-only: nothing here may touch a vector
 * register, and calls into libc that might (pthread_setspecific) go through fr_fpu_safe_call. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "funcrec_int.h"

#define FR_GRAVE 256 /* calls closed by the longjmp rule, kept in case one returns after all */
#define FR_MAX_RECORD 32

struct fr_frame {
  uint64_t slot;     /* where its return address is on the stack */
  uint64_t ret;      /* the return address it had */
  uint32_t function; /* its number in the plan */
  uint32_t pad;
};

struct fr_thread {
  uint32_t busy; /* inside a hook: a signal handler's calls pass unrecorded */
  uint32_t depth;
  int32_t pid, tid;
  struct fr_chunk_header* chunk; /* NULL: none yet, or the last one was full */
  uint8_t* data;                 /* its records */
  uint64_t cap, used;
  uint64_t last_t, last_caller;
  uint64_t part;
  uint64_t lost; /* calls not recorded, for the next LOST record */
  int no_chunk;  /* the spool had none left: stop asking */
  uint32_t grave_next;
  struct fr_frame grave[FR_GRAVE];
  struct fr_frame stack[FR_MAX_DEPTH];
};

static __thread struct fr_thread* fr_self __attribute__((tls_model("initial-exec")));
static pthread_key_t fr_key;
static int fr_key_ok;

void* fr_map_anon(uint64_t len) {
  long p =
      rt_sys6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return RT_FAILED(p) ? NULL : (void*)p;
}

void fr_say(const char* a, const char* b) {
  const char* parts[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    size_t n = 0;
    while (parts[i] != NULL && parts[i][n] != '\0') ++n;
    if (n > 0) RT_SYS(SYS_write, 2, parts[i], n);
  }
}

/* ---- records ---- */

static uint8_t* put_u(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}
static uint8_t* put_s(uint8_t* p, int64_t v) {
  return put_u(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void close_chunk(struct fr_thread* t) {
  if (t->chunk == NULL) return;
  __atomic_store_n(&t->chunk->closed, 1, __ATOMIC_RELEASE);
  RT_SYS(SYS_munmap, t->chunk, fr_g.spool->chunk_size, 0);
  t->chunk = NULL;
}

/* A new chunk from the spool, its records timed from `now`. */
static int open_chunk(struct fr_thread* t, uint64_t now) {
  close_chunk(t);
  if (t->no_chunk || fr_g.spool == NULL) return 0;
  uint64_t i = __atomic_fetch_add(&fr_g.spool->next_chunk, 1, __ATOMIC_RELAXED);
  if (i >= fr_g.spool->capacity) {
    t->no_chunk = 1;
    return 0;
  }
  const uint64_t size = fr_g.spool->chunk_size;
  const long off = (long)(FR_SPOOL_HEADER_SIZE + i * size);
  /* The disk space first: a write through the mapping to a hole the file system cannot fill
   * would be a SIGBUS in the program; a refusal here is only a lost chunk. */
  long fa = rt_sys6(SYS_fallocate, fr_g.spool_fd, 0, off, (long)size, 0, 0);
  if (fa != 0 && fa != -EOPNOTSUPP) {
    t->no_chunk = 1;
    return 0;
  }
  long p = rt_sys6(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   fr_g.spool_fd, off);
  if (RT_FAILED(p)) {
    t->no_chunk = 1;
    return 0;
  }
  struct fr_chunk_header* c = (struct fr_chunk_header*)p;
  c->table = fr_g.table;
  c->pid = t->pid;
  c->tid = t->tid;
  c->part = t->part++;
  c->t0_ns = now;
  c->used = 0;
  __atomic_store_n(&c->magic, FR_CHUNK_MAGIC, __ATOMIC_RELEASE);
  t->chunk = c;
  t->data = (uint8_t*)(c + 1);
  t->cap = size - sizeof *c;
  t->used = 0;
  t->last_t = now;
  t->last_caller = 0;
  return 1;
}

/* Room for one record (and a LOST record before it when calls were lost); NULL when the spool
 * has none. The caller writes the record and hands its end to commit(). */
static uint8_t* begin(struct fr_thread* t, uint64_t now) {
  if (fr_g.ended) return NULL;
  if (t->chunk == NULL || t->cap - t->used < 2 * FR_MAX_RECORD) {
    if (!open_chunk(t, now)) return NULL;
  }
  uint8_t* p = t->data + t->used;
  if (t->lost > 0) {
    *p++ = FR_LOST;
    p = put_u(p, now - t->last_t);
    p = put_u(p, t->lost);
    t->last_t = now;
    t->lost = 0;
  }
  return p;
}
static void commit(struct fr_thread* t, uint8_t* end) {
  t->used = (uint64_t)(end - t->data);
  __atomic_store_n(&t->chunk->used, t->used, __ATOMIC_RELEASE);
}
static uint8_t* put_dt(struct fr_thread* t, uint8_t* p, uint64_t now) {
  p = put_u(p, now > t->last_t ? now - t->last_t : 0);
  t->last_t = now;
  return p;
}

/* UNWIND n: `n` calls ended without returning. */
static void write_unwind(struct fr_thread* t, uint64_t now, uint64_t n) {
  uint8_t* p = begin(t, now);
  if (p == NULL) return;
  *p++ = FR_UNWIND;
  p = put_dt(t, p, now);
  commit(t, put_u(p, n));
}

/* ---- per-thread state ---- */

static void set_key(void* t) {
  pthread_setspecific(fr_key, t);
}

static struct fr_thread* thread_state(void) {
  struct fr_thread* t = fr_self;
  if (t != NULL) return t;
  t = fr_map_anon(sizeof *t);
  if (t == NULL) return NULL;
  t->pid = (int32_t)RT_SYS(SYS_getpid, 0, 0, 0);
  t->tid = (int32_t)RT_SYS(SYS_gettid, 0, 0, 0);
  fr_self = t;
  if (fr_key_ok) fr_fpu_safe_call(set_key, t);
  return t;
}

/* Calls deeper than a new one at `slot` were left by a longjmp (or the slot was reused): close
 * them, keeping their return addresses in the graveyard in case a signal handler on another
 * stack made this look so. A call at the same slot whose return address is the trampoline is a
 * tail call of the one open there, which stays. */
static void close_left(struct fr_thread* t, uint64_t slot, int tail, uint64_t now) {
  uint32_t n = 0;
  while (n < t->depth) {
    const struct fr_frame* f = &t->stack[t->depth - 1 - n];
    if (f->slot > slot || (f->slot == slot && tail)) break;
    t->grave[t->grave_next++ % FR_GRAVE] = *f;
    ++n;
  }
  if (n == 0) return;
  t->depth -= n;
  write_unwind(t, now, n);
}

/* The C side of fr_entry_common: returns where the function goes on. */
FR_HIDDEN uint64_t fr_enter(uint64_t number, uint64_t* slot) {
  const uint64_t cont = fr_continuation(number);
  struct fr_thread* t = fr_self;
  if (t == NULL && (t = thread_state()) == NULL) return cont;
  if (t->busy) {
    ++t->lost;
    return cont;
  }
  t->busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  const uint64_t now = rt_now_ns();
  const uint64_t ret = *slot;
  const int tail = ret == (uint64_t)fr_return_tramp;
  close_left(t, (uint64_t)slot, tail, now);
  uint8_t* p = t->depth < FR_MAX_DEPTH ? begin(t, now) : NULL;
  if (p == NULL) {
    ++t->lost;
  } else {
    *p++ = tail ? FR_TAIL : FR_ENTER;
    p = put_u(p, number);
    p = put_dt(t, p, now);
    if (!tail) {
      p = put_s(p, (int64_t)(ret - t->last_caller));
      t->last_caller = ret;
    }
    commit(t, p);
    struct fr_frame* f = &t->stack[t->depth++];
    f->slot = (uint64_t)slot;
    f->ret = ret;
    f->function = (uint32_t)number;
    *slot = (uint64_t)fr_return_tramp;
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy = 0;
  return cont;
}

static void write_return(struct fr_thread* t, uint64_t now, uint64_t rax, int quiet) {
  uint8_t* p = quiet ? NULL : begin(t, now);
  if (p == NULL) return;
  *p++ = FR_RETURN;
  p = put_dt(t, p, now);
  commit(t, put_s(p, (int64_t)rax));
}

/* The open call whose return slot is `slot`, from the innermost; -1 when none. */
static int find_open(const struct fr_thread* t, uint64_t slot) {
  for (int k = (int)t->depth - 1; k >= 0; --k) {
    if (t->stack[k].slot == slot) return k;
    if (t->stack[k].slot > slot) break; /* outer calls return further up */
  }
  return -1;
}

static int from_grave(struct fr_thread* t, uint64_t slot, uint64_t* ret) {
  for (uint32_t i = 0; i < FR_GRAVE; ++i) {
    struct fr_frame* f = &t->grave[(t->grave_next - 1 - i) % FR_GRAVE];
    if (f->slot == slot && f->ret != 0) {
      *ret = f->ret;
      f->slot = 0;
      f->ret = 0;
      return 1;
    }
  }
  return 0;
}

static void lost_return(uint64_t slot) {
  char hex[19] = "0x";
  for (int i = 0; i < 16; ++i) hex[2 + i] = "0123456789abcdef"[(slot >> (60 - 4 * i)) & 15];
  hex[18] = '\0';
  fr_say(
      "cudatool function recorder: a return through the trampoline with no recorded call at "
      "stack slot ",
      hex);
  fr_say("; stopping the program\n", NULL);
  RT_SYS(SYS_kill, RT_SYS(SYS_getpid, 0, 0, 0), SIGABRT, 0);
  RT_SYS(SYS_exit_group, 134, 0, 0);
}

/* The C side of fr_return_tramp: records the return and gives the real return address. */
FR_HIDDEN uint64_t fr_leave(uint64_t rax, uint64_t sp) {
  const uint64_t slot = sp - 8;
  struct fr_thread* t = fr_self;
  if (t == NULL) lost_return(slot);
  const uint32_t busy = t->busy; /* set: a signal handler returned through a recorded call */
  t->busy = 1;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  const uint64_t now = rt_now_ns();
  uint64_t ret = (uint64_t)fr_return_tramp;
  /* A tail call's return address is the trampoline again: the call it jumped from returns too. */
  while (ret == (uint64_t)fr_return_tramp) {
    int k = find_open(t, slot);
    if (k < 0) {
      if (!from_grave(t, slot, &ret)) lost_return(slot);
      continue;
    }
    if ((uint32_t)k + 1 < t->depth && !busy) write_unwind(t, now, t->depth - 1 - (uint32_t)k);
    write_return(t, now, rax, (int)busy);
    ret = t->stack[k].ret;
    t->depth = (uint32_t)k;
  }
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  t->busy = busy;
  return ret;
}

/* ---- the outside ---- */

void funcrec_mark_device(uint64_t seq) {
  struct fr_thread* t = fr_self;
  if (!fr_g.installed || t == NULL || t->busy) return;
  t->busy = 1;
  const uint64_t now = rt_now_ns();
  uint8_t* p = begin(t, now);
  if (p != NULL) {
    *p++ = FR_DEVICE;
    p = put_dt(t, p, now);
    commit(t, put_u(p, seq));
  }
  t->busy = 0;
}

uint64_t funcrec_real_return(uint64_t value, uint64_t slot) {
  struct fr_thread* t = fr_self;
  if (value != (uint64_t)fr_return_tramp || t == NULL) return value;
  /* The innermost open call at that slot; a tail call's stands for the one it jumped from. */
  for (int k = (int)t->depth - 1; k >= 0; --k) {
    if (t->stack[k].slot == slot && t->stack[k].ret != (uint64_t)fr_return_tramp)
      return t->stack[k].ret;
  }
  return value;
}

void funcrec_thread_end(void) {
  struct fr_thread* t = fr_self;
  if (t == NULL || t->busy) return;
  t->busy = 1;
  if (t->depth > 0 && !fr_g.ended) write_unwind(t, rt_now_ns(), t->depth);
  close_chunk(t);
  /* Its calls are over: a thread-specific destructor runs after the start routine returned (or
   * pthread_exit unwound them). */
  fr_self = NULL;
  RT_SYS(SYS_munmap, t, sizeof *t, 0);
}

static void key_destructor(void* p) {
  (void)p;
  funcrec_thread_end();
}

/* In a forked child: the thread goes on inside the calls it had open, in chunks of its own. */
static void after_fork_child(void) {
  struct fr_thread* t = fr_self;
  if (t == NULL) return;
  t->chunk = NULL; /* the parent's: this process's mapping of it is dropped below */
  t->no_chunk = 0;
  t->part = 0;
  t->pid = (int32_t)RT_SYS(SYS_getpid, 0, 0, 0);
  t->tid = (int32_t)RT_SYS(SYS_gettid, 0, 0, 0);
  const uint64_t now = rt_now_ns();
  uint8_t* p = begin(t, now);
  if (p == NULL) return;
  /* INHERIT may be long: it gets a chunk of its own room (depth bounded by FR_MAX_DEPTH). */
  const uint64_t room = t->cap - (uint64_t)(p - t->data);
  *p++ = FR_INHERIT;
  uint32_t n = t->depth;
  if ((uint64_t)n * 5 + 16 > room) n = (uint32_t)((room - 16) / 5);
  p = put_u(p, n);
  for (uint32_t i = 0; i < n; ++i) p = put_u(p, t->stack[i].function);
  commit(t, p);
}

/* Parent's chunk mappings are inherited: the child unmaps its copy before writing its own. */
static void atfork_child(void) {
  struct fr_thread* t = fr_self;
  if (t != NULL && t->chunk != NULL) {
    RT_SYS(SYS_munmap, t->chunk, fr_g.spool->chunk_size, 0);
    t->chunk = NULL;
  }
  after_fork_child();
}

FR_HIDDEN void fr_register_handlers(void) {
  if (pthread_key_create(&fr_key, key_destructor) == 0) fr_key_ok = 1;
  pthread_atfork(NULL, NULL, atfork_child);
}

__attribute__((destructor)) static void fr_at_exit(void) {
  if (!fr_g.installed) return;
  struct fr_thread* t = fr_self;
  if (t != NULL && !t->busy && t->depth > 0) write_unwind(t, rt_now_ns(), t->depth);
  /* Calls made after this (later destructors) still return through the trampoline, unrecorded:
   * the shadow stacks stay. */
  fr_g.ended = 1;
  if (t != NULL && t->chunk != NULL) __atomic_store_n(&t->chunk->closed, 1, __ATOMIC_RELEASE);
}
