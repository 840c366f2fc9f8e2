/* The recording behaviour of the preload shim (hooks.h): each call is performed through the next
 * definition (libc's, or another interposer's) and recorded when it concerns a device. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "hooks.h"
#include "shim.h"
#include "unwind.h"

/* The event of a call about to be made; its time is taken by start() just before the call. */
static void begin(struct shim_event* ev, int sys) {
  memset(ev, 0, offsetof(struct shim_event, bufs));
  ev->sys = sys;
  ev->pid = rt_pid;
  ev->tid = rt_tid();
  ev->fd = -1;
  shim_capture_stack(ev); /* v2: the call stack, when the recording wants them */
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

/* The event of a call on device fd `fd` (path index `idx`). */
static void begin_fd(struct shim_event* ev, int sys, int fd, int idx) {
  begin(ev, sys);
  ev->fd = fd;
  ev->path = shim_path(idx);
}

/* Performs the call of `ev`: its time, result and errno. */
static long perform(struct shim_call* c, struct shim_event* ev, int* err) {
  start(ev);
  long r = shim_perform(c);
  *err = errno;
  finish(ev, r, *err);
  return r;
}

/* Writes the event and leaves the shim: the call's result, with its errno. */
static long emit_done(struct shim_event* ev, long r, int err) {
  shim_emit(ev);
  rt_t.busy = 0;
  errno = err;
  return r;
}

/* ---- ioctl ---- */

/* Reads one buffer's `before` side into scratch slot 0 at *used. */
static int read_pre(struct shim_buf* b, size_t* used) {
  b->pre_len = b->post_len = 0;
  b->pre_err = b->post_err = 0;
  b->over_cap = b->plan.size > shim_max_buffer();
  if (b->plan.size == 0 || b->over_cap) return 0;
  uint8_t* base = rt_scratch(0, *used + 2 * b->plan.size, 1);
  if (base == NULL) return -1;
  b->pre_at = *used;
  b->post_at = *used + b->plan.size;
  *used += 2 * b->plan.size;
  b->pre_len = rt_read(b->plan.addr, base + b->pre_at, b->plan.size, b->plan.bounded, &b->pre_err);
  return 0;
}

static void read_post(struct shim_buf* b, uint8_t* base) {
  if (b->plan.size == 0 || b->over_cap) return;
  b->post_len =
      rt_read(b->plan.addr, base + b->post_at, b->plan.size, b->plan.bounded, &b->post_err);
}

/* The second level: the buffers behind pointer members of the parameters RM follows
 * (nv_ioctl_abi.h nvtr_plan_pointees), planned from the parameters' bytes before the call. */
static int read_pointees(struct shim_event* ev, size_t* used) {
  struct nvtr_buf_plan plans[NVTR_MAX_POINTEES];
  int n = 0, first_level = ev->nbufs;
  uint8_t* base = rt_scratch(0, 0, 1);
  for (int i = 1; i < first_level && n < NVTR_MAX_POINTEES; ++i) {
    const struct shim_buf* b = &ev->bufs[i];
    int dropped = 0;
    n += nvtr_plan_pointees(shim_rm_branch(), &b->plan, base + b->pre_at, b->pre_len, plans + n,
                            NVTR_MAX_POINTEES - n, &dropped);
    if (dropped > 0) {
      ev->pointees_dropped = dropped;
      ev->pointees_dropped_role = b->plan.role;
    }
  }
  for (int i = 0; i < n && ev->nbufs < SHIM_MAX_BUFS; ++i) {
    ev->bufs[ev->nbufs].plan = plans[i];
    if (read_pre(&ev->bufs[ev->nbufs++], used) != 0) return -1;
  }
  return 0;
}

/* The buffers of an ioctl before the call (into scratch slot 0): the argument, the buffers it
 * points to (an XFER's too), and those behind their pointer members. 0 when scratch memory ran
 * out (the call is then not recorded). */
static int read_before(struct shim_event* ev, int kind, uint32_t req, uint64_t arg) {
  size_t used = 0;
  ev->bufs[0].plan = nvtr_plan_arg(kind, req, arg, shim_uvm_branch());
  ev->nbufs = 1;
  if (read_pre(&ev->bufs[0], &used) != 0) return 0;
  struct nvtr_buf_plan plans[2];
  uint8_t* base = rt_scratch(0, 0, 1);
  int n = nvtr_plan_nested(kind, req, base + ev->bufs[0].pre_at, ev->bufs[0].pre_len,
                           shim_rm_branch(), plans);
  for (int i = 0; i < n; ++i) {
    ev->bufs[ev->nbufs].plan = plans[i];
    if (read_pre(&ev->bufs[ev->nbufs++], &used) != 0) return 0;
  }
  /* An XFER's target holds the parameters of another escape, with its own nested buffers. */
  if (n == 1 && plans[0].role[0] == 'x') {
    base = rt_scratch(0, 0, 1);
    const struct shim_buf* x = &ev->bufs[1];
    int m = nvtr_plan_xfer_inner(base + ev->bufs[0].pre_at, base + x->pre_at, x->pre_len,
                                 shim_rm_branch(), plans);
    for (int i = 0; i < m; ++i) {
      ev->bufs[ev->nbufs].plan = plans[i];
      if (read_pre(&ev->bufs[ev->nbufs++], &used) != 0) return 0;
    }
  }
  return read_pointees(ev, &used) == 0;
}

/* The buffers after the call, and where both sides lie (scratch slot 0 may have moved). */
static void read_after(struct shim_event* ev) {
  uint8_t* base = rt_scratch(0, 0, 1);
  for (int i = 0; i < ev->nbufs; ++i) {
    read_post(&ev->bufs[i], base);
    ev->bufs[i].pre = base + ev->bufs[i].pre_at;
    ev->bufs[i].post = base + ev->bufs[i].post_at;
  }
}

long beh_ioctl(struct shim_call* c, int fd, unsigned long req, uint64_t arg, int via_syscall) {
  int idx = shim_dev_of_fd(fd);
  if (idx < 0 || !shim_ready()) return shim_perform(c);
  shim_count(via_syscall ? &shim_ctl->route_syscall : &shim_ctl->route_ioctl);
  if (rt_t.busy) {
    shim_count(&shim_ctl->lost);
    return shim_perform(c);
  }
  rt_t.busy = 1;
  struct shim_event ev;
  begin_fd(&ev, SHIM_IOCTL, fd, idx);
  ev.req = (uint32_t)req; /* the kernel takes an unsigned int */
  int ok = read_before(&ev, shim_path_kind(idx), (uint32_t)req, arg);
  int err;
  long r = perform(c, &ev, &err);
  if (ok) {
    read_after(&ev);
    shim_emit(&ev);
  } else {
    shim_count(&shim_ctl->lost);
  }
  shim_scratch_trim();
  rt_t.busy = 0;
  errno = err;
  return r;
}

/* ---- fds ---- */

long beh_open(struct shim_call* c, int dirfd, const char* path, uint64_t flags) {
  char abs[PATH_MAX];
  int idx = -1;
  if (!shim_ready() || rt_t.busy) return shim_perform(c);
  if (!shim_device_path(dirfd, path, abs, &idx)) {
    return shim_env_on() ? shim_env_open(c, dirfd, path, flags) : shim_perform(c);
  }
  rt_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_OPEN);
  ev.path = shim_path(idx);
  ev.flags = flags;
  int err;
  long r = perform(c, &ev, &err);
  if (r >= 0) shim_fd_set((int)r, idx);
  return emit_done(&ev, r, err);
}

long beh_close(struct shim_call* c, int fd) {
  shim_env_fd_clear(fd);
  int idx = shim_dev_of_fd(fd);
  if (idx < 0 || !shim_ready()) return shim_perform(c);
  if (rt_t.busy) {
    long r = shim_perform(c);
    shim_fd_clear(fd);
    shim_count(&shim_ctl->lost);
    return r;
  }
  rt_t.busy = 1;
  struct shim_event ev;
  begin_fd(&ev, SHIM_CLOSE, fd, idx);
  int err;
  long r = perform(c, &ev, &err);
  if (r == 0 || err != EBADF) shim_fd_clear(fd); /* Linux releases the fd even on EINTR/EIO */
  return emit_done(&ev, r, err);
}

long beh_close_range(struct shim_call* c, unsigned lo, unsigned hi, unsigned flags) {
  long r = shim_perform(c);
  int err = errno;
  if (r != 0 || (flags & CLOSE_RANGE_CLOEXEC) != 0 || !shim_ready()) return r;
  for (unsigned fd = lo; fd <= hi && fd < RT_MAX_FD; ++fd) {
    int idx = shim_dev_of_fd((int)fd);
    if (idx < 0) continue;
    shim_fd_clear((int)fd);
    if (rt_t.busy) continue;
    rt_t.busy = 1;
    struct shim_event ev;
    begin_fd(&ev, SHIM_CLOSE, (int)fd, idx);
    start(&ev);
    finish(&ev, 0, 0);
    shim_emit(&ev);
    rt_t.busy = 0;
  }
  errno = err;
  return r;
}

/* dup, dup2, dup3, fcntl(F_DUPFD*): newfd -1 when the call picks it. */
long beh_dup(struct shim_call* c, int oldfd, int newfd) {
  if (newfd >= 0 && newfd != oldfd) shim_env_fd_clear(newfd); /* another file put over it */
  int idx = shim_dev_of_fd(oldfd);
  int replaced = newfd >= 0 && newfd != oldfd && shim_dev_of_fd(newfd) >= 0;
  if ((idx < 0 && !replaced) || !shim_ready()) return shim_perform(c);
  if (idx < 0 || rt_t.busy) {
    long r = shim_perform(c);
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
  rt_t.busy = 1;
  struct shim_event ev;
  begin_fd(&ev, SHIM_DUP, oldfd, idx);
  int err;
  long r = perform(c, &ev, &err);
  if (r >= 0) shim_fd_set((int)r, idx);
  return emit_done(&ev, r, err);
}

/* ---- mappings ---- */

long beh_mmap(struct shim_call* c, uint64_t addr, uint64_t len, int prot, int flags, int fd,
              uint64_t off) {
  int idx = (flags & MAP_ANONYMOUS) ? -1 : shim_dev_of_fd(fd);
  if (idx < 0 || !shim_ready()) return shim_perform(c);
  if (rt_t.busy) {
    shim_count(&shim_ctl->lost);
    return shim_perform(c);
  }
  rt_t.busy = 1;
  struct shim_event ev;
  begin_fd(&ev, SHIM_MMAP, fd, idx);
  ev.addr = addr;
  ev.len = len;
  ev.prot = (uint64_t)(unsigned)prot;
  ev.flags = (uint64_t)(unsigned)flags;
  ev.off = off;
  int err;
  long r = perform(c, &ev, &err);
  if (r != -1) shim_map_add((uint64_t)r, len, idx);
  return emit_done(&ev, r, err);
}

long beh_munmap(struct shim_call* c, uint64_t addr, uint64_t len) {
  if (!shim_ready() || rt_t.busy || !shim_map_overlaps(addr, len)) return shim_perform(c);
  rt_t.busy = 1;
  struct shim_event ev;
  begin(&ev, SHIM_MUNMAP);
  ev.addr = addr;
  ev.len = len;
  int err;
  long r = perform(c, &ev, &err);
  if (r == 0) {
    int idx = shim_map_remove(addr, len);
    if (idx >= 0) ev.path = shim_path(idx);
  }
  return emit_done(&ev, r, err);
}

/* Calls on paths and fstat (beh_path, beh_fstat): env_calls.c. */
