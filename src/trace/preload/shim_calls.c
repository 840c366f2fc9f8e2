/* The functions the preload shim interposes: libc's ioctl, open family, close, close_range, dup
 * family, fcntl (F_DUPFD), mmap, munmap, and syscall() for the same system calls. Each performs
 * the call through the next definition (libc's, or another interposer's), and records it when it
 * concerns a device. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "shim.h"

#define EXPORT __attribute__((visibility("default")))

enum call_kind {
  C_IOCTL,
  C_OPEN,
  C_OPEN64,
  C_OPEN_2,
  C_OPEN64_2,
  C_OPENAT,
  C_OPENAT64,
  C_OPENAT_2,
  C_OPENAT64_2,
  C_CREAT,
  C_CREAT64,
  C_CLOSE,
  C_CLOSE_RANGE,
  C_DUP,
  C_DUP2,
  C_DUP3,
  C_FCNTL,
  C_FCNTL64,
  C_MMAP,
  C_MMAP64,
  C_MUNMAP,
  C_SYSCALL,
  C_COUNT
};

static const char* const kNames[C_COUNT] = {
    "ioctl",       "open",       "open64",       "__open_2", "__open64_2", "openat",
    "openat64",    "__openat_2", "__openat64_2", "creat",    "creat64",    "close",
    "close_range", "dup",        "dup2",         "dup3",     "fcntl",      "fcntl64",
    "mmap",        "mmap64",     "munmap",       "syscall"};

/* The next definition of each function (RTLD_NEXT), resolved on first use. */
static void* _Atomic real[C_COUNT];

struct call {
  int kind;
  long nr; /* C_SYSCALL */
  long a[6];
};

typedef long (*fn6)(long, long, long, long, long, long);
typedef long (*fn7)(long, long, long, long, long, long, long);

/* Performs the call as the program asked for it; returns its result, errno as libc sets it. */
static long perform(const struct call* c) {
  void* f = real[c->kind];
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, kNames[c->kind]);
    real[c->kind] = f;
  }
  if (f == NULL) {
    errno = ENOSYS;
    return -1;
  }
  if (c->kind == C_SYSCALL) {
    return ((fn7)f)(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
  }
  /* Every interposed function takes at most six integer or pointer arguments, passed in the
   * same registers whatever their declared types (x86-64 SysV). The result is a pointer for
   * mmap, an int (sign-extended here) for the others. */
  long r = ((fn6)f)(c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
  return c->kind == C_MMAP || c->kind == C_MMAP64 ? r : (long)(int)r;
}

/* The event of a call about to be made; its time is taken by start() just before the call. */
static void begin(struct shim_event* ev, int sys) {
  memset(ev, 0, offsetof(struct shim_event, bufs));
  ev->sys = sys;
  ev->pid = shim_pid;
  ev->tid = shim_tid();
  ev->fd = -1;
}

static void start(struct shim_event* ev) {
  ev->t = shim_now();
}

static void finish(struct shim_event* ev, long r, int err) {
  ev->dur = shim_now() - ev->t;
  ev->has_dur = 1;
  ev->ret = r;
  ev->err = r == -1 ? err : 0;
}

/* ---- ioctl ---- */

/* Reads one buffer's `before` side into scratch slot 0 at *used. */
static int read_pre(struct shim_buf* b, size_t* used) {
  b->pre_len = b->post_len = 0;
  b->pre_err = b->post_err = 0;
  b->over_cap = b->plan.size > shim_max_buffer();
  if (b->plan.size == 0 || b->over_cap) return 0;
  uint8_t* base = shim_scratch(0, *used + 2 * b->plan.size, 1);
  if (base == NULL) return -1;
  b->pre_at = *used;
  b->post_at = *used + b->plan.size;
  *used += 2 * b->plan.size;
  b->pre_len =
      shim_read(b->plan.addr, base + b->pre_at, b->plan.size, b->plan.bounded, &b->pre_err);
  return 0;
}

static void read_post(struct shim_buf* b, uint8_t* base) {
  if (b->plan.size == 0 || b->over_cap) return;
  b->post_len =
      shim_read(b->plan.addr, base + b->post_at, b->plan.size, b->plan.bounded, &b->post_err);
}

static long do_ioctl(struct call* c, int fd, unsigned long req, uint64_t arg, int via_syscall) {
  int idx = shim_dev_of_fd(fd);
  if (idx < 0 || !shim_ready()) return perform(c);
  shim_count(via_syscall ? &shim_ctl->route_syscall : &shim_ctl->route_ioctl);
  if (shim_t.busy) {
    shim_count(&shim_ctl->lost);
    return perform(c);
  }
  shim_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_IOCTL);
  ev.fd = fd;
  ev.path = shim_path(idx);
  ev.req = (uint32_t)req; /* the kernel takes an unsigned int */
  int kind = shim_path_kind(idx);
  size_t used = 0;
  int ok = 1;
  ev.bufs[0].plan = nvtr_plan_arg(kind, (uint32_t)req, arg, shim_uvm_branch());
  ev.nbufs = 1;
  ok = read_pre(&ev.bufs[0], &used) == 0;
  if (ok) {
    struct nvtr_buf_plan plans[2];
    uint8_t* base = shim_scratch(0, 0, 1);
    int n =
        nvtr_plan_nested(kind, (uint32_t)req, base + ev.bufs[0].pre_at, ev.bufs[0].pre_len, plans);
    for (int i = 0; i < n && ok; ++i) {
      ev.bufs[ev.nbufs].plan = plans[i];
      ok = read_pre(&ev.bufs[ev.nbufs++], &used) == 0;
    }
    /* An XFER's target holds the parameters of another escape, with its own nested buffers. */
    if (ok && n == 1 && plans[0].role[0] == 'x') {
      base = shim_scratch(0, 0, 1);
      const struct shim_buf* x = &ev.bufs[1];
      int m = nvtr_plan_xfer_inner(base + ev.bufs[0].pre_at, base + x->pre_at, x->pre_len, plans);
      for (int i = 0; i < m && ok; ++i) {
        ev.bufs[ev.nbufs].plan = plans[i];
        ok = read_pre(&ev.bufs[ev.nbufs++], &used) == 0;
      }
    }
  }
  start(&ev);
  long r = perform(c);
  int err = errno;
  finish(&ev, r, err);
  if (ok) {
    uint8_t* base = shim_scratch(0, 0, 1);
    for (int i = 0; i < ev.nbufs; ++i) {
      read_post(&ev.bufs[i], base);
      ev.bufs[i].pre = base + ev.bufs[i].pre_at;
      ev.bufs[i].post = base + ev.bufs[i].post_at;
    }
    shim_emit(&ev);
  } else {
    shim_count(&shim_ctl->lost);
  }
  shim_scratch_trim();
  shim_t.busy = 0;
  errno = err;
  return r;
}

/* ---- fds ---- */

static long do_open(struct call* c, int dirfd, const char* path, uint64_t flags) {
  char abs[PATH_MAX];
  int idx = -1;
  if (!shim_ready() || shim_t.busy || !shim_device_path(dirfd, path, abs, &idx)) {
    return perform(c);
  }
  shim_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_OPEN);
  ev.path = shim_path(idx);
  ev.flags = flags;
  start(&ev);
  long r = perform(c);
  int err = errno;
  finish(&ev, r, err);
  if (r >= 0) shim_fd_set((int)r, idx);
  shim_emit(&ev);
  shim_t.busy = 0;
  errno = err;
  return r;
}

static long do_close(struct call* c, int fd) {
  int idx = shim_dev_of_fd(fd);
  if (idx < 0 || !shim_ready()) return perform(c);
  if (shim_t.busy) {
    long r = perform(c);
    shim_fd_clear(fd);
    shim_count(&shim_ctl->lost);
    return r;
  }
  shim_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_CLOSE);
  ev.fd = fd;
  ev.path = shim_path(idx);
  start(&ev);
  long r = perform(c);
  int err = errno;
  finish(&ev, r, err);
  if (r == 0 || err != EBADF) shim_fd_clear(fd); /* Linux releases the fd even on EINTR/EIO */
  shim_emit(&ev);
  shim_t.busy = 0;
  errno = err;
  return r;
}

static long do_close_range(struct call* c, unsigned lo, unsigned hi, unsigned flags) {
  long r = perform(c);
  int err = errno;
  if (r != 0 || (flags & CLOSE_RANGE_CLOEXEC) != 0 || !shim_ready()) return r;
  for (unsigned fd = lo; fd <= hi && fd < 65536; ++fd) {
    int idx = shim_dev_of_fd((int)fd);
    if (idx < 0) continue;
    shim_fd_clear((int)fd);
    if (shim_t.busy) continue;
    shim_t.busy = 1;
    struct shim_event ev;
    begin(&ev, SHIM_CLOSE);
    ev.fd = (int)fd;
    ev.path = shim_path(idx);
    start(&ev);
    finish(&ev, 0, 0);
    shim_emit(&ev);
    shim_t.busy = 0;
  }
  errno = err;
  return r;
}

/* dup, dup2, dup3, fcntl(F_DUPFD*): newfd -1 when the call picks it. */
static long do_dup(struct call* c, int oldfd, int newfd) {
  int idx = shim_dev_of_fd(oldfd);
  int replaced = newfd >= 0 && newfd != oldfd && shim_dev_of_fd(newfd) >= 0;
  if ((idx < 0 && !replaced) || !shim_ready()) return perform(c);
  if (idx < 0 || shim_t.busy) {
    long r = perform(c);
    if (r >= 0) {
      if (idx >= 0) {
        shim_fd_set((int)r, idx);
        shim_count(&shim_ctl->lost);
      } else {
        shim_fd_clear((int)r); /* another file put over a device fd */
      }
    }
    return r;
  }
  shim_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_DUP);
  ev.fd = oldfd;
  ev.path = shim_path(idx);
  start(&ev);
  long r = perform(c);
  int err = errno;
  finish(&ev, r, err);
  if (r >= 0) shim_fd_set((int)r, idx);
  shim_emit(&ev);
  shim_t.busy = 0;
  errno = err;
  return r;
}

/* ---- mappings ---- */

static long do_mmap(struct call* c, uint64_t addr, uint64_t len, int prot, int flags, int fd,
                    uint64_t off) {
  int idx = (flags & MAP_ANONYMOUS) ? -1 : shim_dev_of_fd(fd);
  if (idx < 0 || !shim_ready()) return perform(c);
  if (shim_t.busy) {
    shim_count(&shim_ctl->lost);
    return perform(c);
  }
  shim_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_MMAP);
  ev.fd = fd;
  ev.path = shim_path(idx);
  ev.addr = addr;
  ev.len = len;
  ev.prot = (uint64_t)(unsigned)prot;
  ev.flags = (uint64_t)(unsigned)flags;
  ev.off = off;
  start(&ev);
  long r = perform(c);
  int err = errno;
  finish(&ev, r, err);
  if (r != -1) shim_map_add((uint64_t)r, len, idx);
  shim_emit(&ev);
  shim_t.busy = 0;
  errno = err;
  return r;
}

static long do_munmap(struct call* c, uint64_t addr, uint64_t len) {
  if (!shim_ready() || shim_t.busy || !shim_map_overlaps(addr, len)) return perform(c);
  shim_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_MUNMAP);
  ev.addr = addr;
  ev.len = len;
  start(&ev);
  long r = perform(c);
  int err = errno;
  finish(&ev, r, err);
  if (r == 0) {
    int idx = shim_map_remove(addr, len);
    if (idx >= 0) ev.path = shim_path(idx);
  }
  shim_emit(&ev);
  shim_t.busy = 0;
  errno = err;
  return r;
}

/* ---- the interposed functions ---- */

#define CALL(k, ...) struct call c = {k, 0, {__VA_ARGS__}}

EXPORT int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  CALL(C_IOCTL, fd, (long)req, (long)arg);
  return (int)do_ioctl(&c, fd, req, (uint64_t)(uintptr_t)arg, 0);
}

static int open_mode(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name, kind)                                 \
  EXPORT int name(const char* path, int flags, ...) {         \
    va_list ap;                                               \
    va_start(ap, flags);                                      \
    int mode = open_mode(flags, ap);                          \
    va_end(ap);                                               \
    CALL(kind, (long)path, flags, mode);                      \
    return (int)do_open(&c, AT_FDCWD, path, (unsigned)flags); \
  }
OPEN_LIKE(open, C_OPEN)
OPEN_LIKE(open64, C_OPEN64)

#define OPENAT_LIKE(name, kind)                                  \
  EXPORT int name(int dirfd, const char* path, int flags, ...) { \
    va_list ap;                                                  \
    va_start(ap, flags);                                         \
    int mode = open_mode(flags, ap);                             \
    va_end(ap);                                                  \
    CALL(kind, dirfd, (long)path, flags, mode);                  \
    return (int)do_open(&c, dirfd, path, (unsigned)flags);       \
  }
OPENAT_LIKE(openat, C_OPENAT)
OPENAT_LIKE(openat64, C_OPENAT64)

EXPORT int __open_2(const char* path, int flags) {
  CALL(C_OPEN_2, (long)path, flags);
  return (int)do_open(&c, AT_FDCWD, path, (unsigned)flags);
}
EXPORT int __open64_2(const char* path, int flags) {
  CALL(C_OPEN64_2, (long)path, flags);
  return (int)do_open(&c, AT_FDCWD, path, (unsigned)flags);
}
EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  CALL(C_OPENAT_2, dirfd, (long)path, flags);
  return (int)do_open(&c, dirfd, path, (unsigned)flags);
}
EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  CALL(C_OPENAT64_2, dirfd, (long)path, flags);
  return (int)do_open(&c, dirfd, path, (unsigned)flags);
}
EXPORT int creat(const char* path, mode_t mode) {
  CALL(C_CREAT, (long)path, (long)mode);
  return (int)do_open(&c, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);
}
EXPORT int creat64(const char* path, mode_t mode) {
  CALL(C_CREAT64, (long)path, (long)mode);
  return (int)do_open(&c, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);
}

EXPORT int close(int fd) {
  CALL(C_CLOSE, fd);
  return (int)do_close(&c, fd);
}
EXPORT int close_range(unsigned lo, unsigned hi, int flags) {
  CALL(C_CLOSE_RANGE, (long)lo, (long)hi, flags);
  return (int)do_close_range(&c, lo, hi, (unsigned)flags);
}
EXPORT int dup(int fd) {
  CALL(C_DUP, fd);
  return (int)do_dup(&c, fd, -1);
}
EXPORT int dup2(int fd, int newfd) {
  CALL(C_DUP2, fd, newfd);
  return (int)do_dup(&c, fd, newfd);
}
EXPORT int dup3(int fd, int newfd, int flags) {
  CALL(C_DUP3, fd, newfd, flags);
  return (int)do_dup(&c, fd, newfd);
}

#define FCNTL_LIKE(name, kind)                                                    \
  EXPORT int name(int fd, int cmd, ...) {                                         \
    va_list ap;                                                                   \
    va_start(ap, cmd);                                                            \
    void* arg = va_arg(ap, void*);                                                \
    va_end(ap);                                                                   \
    CALL(kind, fd, cmd, (long)arg);                                               \
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return (int)do_dup(&c, fd, -1); \
    return (int)perform(&c);                                                      \
  }
FCNTL_LIKE(fcntl, C_FCNTL)
FCNTL_LIKE(fcntl64, C_FCNTL64)

EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  CALL(C_MMAP, (long)addr, (long)len, prot, flags, fd, (long)off);
  return (void*)do_mmap(&c, (uint64_t)(uintptr_t)addr, len, prot, flags, fd, (uint64_t)off);
}
EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  CALL(C_MMAP64, (long)addr, (long)len, prot, flags, fd, (long)off);
  return (void*)do_mmap(&c, (uint64_t)(uintptr_t)addr, len, prot, flags, fd, (uint64_t)off);
}
EXPORT int munmap(void* addr, size_t len) {
  CALL(C_MUNMAP, (long)addr, (long)len);
  return (int)do_munmap(&c, (uint64_t)(uintptr_t)addr, len);
}

/* syscall(): the route a build would take to bypass libc's ioctl(). */
EXPORT long syscall(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(ap, long);
  va_end(ap);
  struct call c = {C_SYSCALL, nr, {a[0], a[1], a[2], a[3], a[4], a[5]}};
  switch (nr) {
    case SYS_ioctl:
      return do_ioctl(&c, (int)a[0], (unsigned long)a[1], (uint64_t)a[2], 1);
    case SYS_open:
      return do_open(&c, AT_FDCWD, (const char*)a[0], (uint64_t)(unsigned)a[1]);
    case SYS_openat:
      return do_open(&c, (int)a[0], (const char*)a[1], (uint64_t)(unsigned)a[2]);
    case SYS_creat:
      return do_open(&c, AT_FDCWD, (const char*)a[0], O_CREAT | O_WRONLY | O_TRUNC);
    case SYS_close:
      return do_close(&c, (int)a[0]);
    case SYS_close_range:
      return do_close_range(&c, (unsigned)a[0], (unsigned)a[1], (unsigned)a[2]);
    case SYS_dup:
      return do_dup(&c, (int)a[0], -1);
    case SYS_dup2:
    case SYS_dup3:
      return do_dup(&c, (int)a[0], (int)a[1]);
    case SYS_fcntl:
      if ((int)a[1] == F_DUPFD || (int)a[1] == F_DUPFD_CLOEXEC) return do_dup(&c, (int)a[0], -1);
      return perform(&c);
    case SYS_mmap:
      return do_mmap(&c, (uint64_t)a[0], (uint64_t)a[1], (int)a[2], (int)a[3], (int)a[4],
                     (uint64_t)a[5]);
    case SYS_munmap:
      return do_munmap(&c, (uint64_t)a[0], (uint64_t)a[1]);
    default:
      return perform(&c);
  }
}
