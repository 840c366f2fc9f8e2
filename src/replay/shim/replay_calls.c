/* The replay behaviour of the interposition layer (hooks.h) for device calls: opens of device
 * paths get fds the replay owns (one end of a socket pair: polls never fire, writes are taken),
 * ioctls are answered from the answer table, mmaps of device fds get shared anonymous memory,
 * and nothing of the host's device nodes is touched. Calls on other fds pass through. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "../../analysis/version_strings.h"
#include "../../base/glob_match.h"
#include "replay_shim.h"

#define NV_OK 0u
#define NV_ERR_NOT_SUPPORTED 0x56u

#define ARG_MAX_BYTES 16384u
#define XFER_MAX_BYTES 4096u

static int fd_peer[RT_MAX_FD]; /* the other end of a device fd's socket pair, + 1 */

static void begin_log(struct rs_rec* w, uint32_t sys, uint64_t payload, int fd, int path) {
  if (!rs_log_begin(w, sys, payload)) return;
  w->r->fd = fd;
  w->r->path = path;
}

static void end_log(struct rs_rec* w, long ret, int err, int outcome, int answered, uint64_t t0) {
  if (w->r == NULL) return;
  w->r->ret = ret;
  w->r->err = ret == -1 ? err : 0;
  w->r->outcome = (uint32_t)outcome;
  w->r->answered = answered;
  w->r->t_ns = t0;
  w->r->dur_ns = rt_now_ns() - t0;
  rs_log_commit(w);
}

/* The recorded call that answers a call of `sys` on a device fd of path `idx`. */
static struct rs_match match_fd_call(uint32_t sys, int idx) {
  struct rp_ident id = {sys, (uint32_t)idx, 0, 0, 0, 0, 0, 0};
  return rs_match(&id, 0, 0);
}

/* Leaves the shim after an answered call that the recording holds (progress): its result. */
static long answered(long r, int err) {
  rs_progress();
  rt_t.busy = 0;
  errno = err;
  return r;
}

/* A recorded answer for an fd call: its failure, or success. */
static int recorded_failure(const struct rs_match* m, int* err) {
  if (m->event < 0) return 0;
  const struct rp_event* e = rs_event((uint32_t)m->event);
  if (e->ret >= 0) return 0;
  *err = e->err != 0 ? e->err : EIO;
  return 1;
}

/* ---- open, close, dup ---- */

static int device_glob(const char* abs) {
  return nvtr_glob_list_match(rs_str(rs.t->devices), abs);
}

static long new_device_fd(uint64_t flags) {
  int sv[2];
  int type = SOCK_STREAM | ((flags & O_CLOEXEC) ? SOCK_CLOEXEC : 0) |
             ((flags & O_NONBLOCK) ? SOCK_NONBLOCK : 0);
  long r = rt_sys6(SYS_socketpair, AF_UNIX, type, 0, (long)sv, 0, 0);
  if (r < 0) {
    errno = (int)-r;
    return -1;
  }
  /* The peer: close-on-exec, so that an exec'd program does not inherit it, and moved up out of
   * the way, so that the program's fds get the numbers they got in the recording. */
  long peer = RT_SYS(SYS_fcntl, sv[1], F_DUPFD_CLOEXEC, 512);
  if (peer >= 0) {
    RT_SYS(SYS_close, sv[1], 0, 0);
  } else {
    peer = sv[1];
    RT_SYS(SYS_fcntl, peer, F_SETFD, FD_CLOEXEC);
  }
  if (sv[0] >= 0 && sv[0] < RT_MAX_FD)
    __atomic_store_n(&fd_peer[sv[0]], (int)peer + 1, __ATOMIC_RELEASE);
  return sv[0];
}

static void drop_device_fd(int fd) {
  rs_fd_clear(fd);
  if (fd >= 0 && fd < RT_MAX_FD) {
    int p = __atomic_exchange_n(&fd_peer[fd], 0, __ATOMIC_ACQ_REL);
    if (p > 0) RT_SYS(SYS_close, p - 1, 0, 0);
  }
}

/* The driver version in the strings of the library file at `path` (version_strings.h; read in
 * chunks that overlap by the longest match): 1 when found. */
static int version_in_file(const char* path, char out[NVTR_VERSION_MAX]) {
  long fd = RT_SYS(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  static char buf[(1u << 20) + NVTR_VERSION_SPAN];
  size_t have = 0;
  int found = 0;
  for (;;) {
    long n = RT_SYS(SYS_read, fd, buf + have, sizeof buf - have);
    if (n <= 0) break;
    have += (size_t)n;
    if (nvtr_find_version(buf, have, NVTR_VERSION_COPYRIGHT, out) >= 0 ||
        nvtr_find_version(buf, have, NVTR_VERSION_PROFILES, out) >= 0) {
      found = 1;
      break;
    }
    if (have > NVTR_VERSION_SPAN) { /* keep the tail: a match may straddle the chunks */
      memmove(buf, buf + have - NVTR_VERSION_SPAN, NVTR_VERSION_SPAN);
      have = NVTR_VERSION_SPAN;
    }
  }
  RT_SYS(SYS_close, fd, 0, 0);
  return found;
}

/* A trace answers only the library that made it: the first device open checks the version of
 * the libcuda this process mapped (a file named libcuda.so*) against the recording's driver
 * version, and ends the program (exit status 2) when they differ. The version is the one in the
 * library's strings (as `cudatool info` reads it); its file name's (libcuda.so.<version>) only
 * where the strings hold none. */
static void check_library(void) {
  static int done;
  if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL)) return;
  const char* want = rs_str(rs.t->driver);
  if (want[0] == '\0') return;
  long fd = RT_SYS(SYS_open, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  static char buf[1 << 16];
  char line[PATH_MAX + 128];
  size_t ln = 0;
  long n;
  char found[PATH_MAX] = "";
  while (found[0] == '\0' && (n = RT_SYS(SYS_read, fd, buf, sizeof buf)) > 0) {
    for (long i = 0; i < n && found[0] == '\0'; ++i) {
      if (buf[i] != '\n') {
        if (ln + 1 < sizeof line) line[ln++] = buf[i];
        continue;
      }
      line[ln] = '\0';
      ln = 0;
      const char* p = strchr(line, '/');
      const char* b = p ? strrchr(p, '/') + 1 : NULL;
      if (b != NULL && strncmp(b, "libcuda.so", 10) == 0 && (b[10] == '\0' || b[10] == '.')) {
        strncpy(found, p, sizeof found - 1);
      }
    }
  }
  RT_SYS(SYS_close, fd, 0, 0);
  if (found[0] == '\0') return;
  char v[NVTR_VERSION_MAX] = "";
  const char* from = " from its strings";
  if (!version_in_file(found, v)) {
    const char* tail = strrchr(found, '/') + 1 + 10; /* after "libcuda.so" */
    size_t len = tail[0] == '.' ? nvtr_version_length(tail + 1, strlen(tail + 1)) : 0;
    if (len == 0 || len != strlen(tail + 1) || len >= sizeof v) return; /* nothing to check */
    memcpy(v, tail + 1, len + 1);
    from = " from its file name";
  }
  if (strcmp(v, want) == 0) return;
  char msg[PATH_MAX + 256];
  size_t k = 0;
  const char* parts[] = {"the program loaded ",
                         found,
                         " (driver ",
                         v,
                         from,
                         "); the trace was recorded with driver ",
                         want,
                         NULL};
  for (int i = 0; parts[i] != NULL; ++i) {
    for (const char* q = parts[i]; *q != '\0' && k + 1 < sizeof msg; ++q) msg[k++] = *q;
  }
  msg[k] = '\0';
  struct rs_rec w;
  if (rs_log_begin(&w, RP_LOG_REFUSED, k + 1)) {
    rs_log_text(&w, msg);
    rs_log_commit(&w);
  }
  RT_SYS(SYS_exit_group, 2, 0, 0);
}

long beh_open(struct shim_call* c, int dirfd, const char* path, uint64_t flags) {
  if (!rs_ready() || rt_t.busy) return shim_perform(c);
  char abs[PATH_MAX];
  if (!rt_path_absolute(dirfd, path, abs, sizeof abs)) return shim_perform(c);
  int idx = rs_device_index(abs);
  if (idx < 0) {
    if (device_glob(abs) || rs_env_device(abs) != NULL) {
      /* A device node the recording never opened: it does not exist here. */
      struct rs_rec w;
      uint64_t t0 = rt_now_ns();
      begin_log(&w, RP_OPEN, strlen(abs) + 1, -1, -1);
      if (w.r) w.r->flags = flags;
      rs_log_text(&w, abs);
      end_log(&w, -1, ENOENT, RP_OUT_NO_DEVICE, -1, t0);
      errno = ENOENT;
      return -1;
    }
    char redirected[PATH_MAX];
    if (rs_env_redirect(abs, redirected, sizeof redirected)) {
      struct shim_call d = *c;
      d.a[shim_fn[c->kind].path] = (long)redirected;
      return shim_perform(&d);
    }
    long r = shim_perform(c);
    if (r >= 0) rs_log_cuda_image((int)r, abs);
    return r;
  }
  check_library();
  rt_t.busy = 1;
  uint64_t t0 = rt_now_ns();
  struct rs_match m = match_fd_call(RP_OPEN, idx);
  int err = 0;
  long r;
  int outcome = m.event >= 0 ? m.outcome : RP_OUT_PASSED;
  if (recorded_failure(&m, &err)) {
    r = -1;
  } else {
    r = new_device_fd(flags);
    err = errno;
    if (r >= 0) rs_fd_set((int)r, idx, (flags & O_CLOEXEC) != 0);
  }
  struct rs_rec w;
  begin_log(&w, RP_OPEN, 0, (int)r, idx);
  if (w.r) w.r->flags = flags;
  end_log(&w, r, err, outcome, m.event, t0);
  return answered(r, err);
}

long beh_close(struct shim_call* c, int fd) {
  int idx = rs_fd_path(fd);
  if (idx < 0 || !rs_ready() || rt_t.busy) return shim_perform(c);
  rt_t.busy = 1;
  uint64_t t0 = rt_now_ns();
  struct rs_match m = match_fd_call(RP_CLOSE, idx);
  long r = shim_perform(c);
  int err = errno;
  drop_device_fd(fd);
  struct rs_rec w;
  begin_log(&w, RP_CLOSE, 0, fd, idx);
  end_log(&w, r, err, m.event >= 0 ? m.outcome : RP_OUT_FREELIKE, m.event, t0);
  rt_t.busy = 0;
  errno = err;
  return r;
}

long beh_close_range(struct shim_call* c, unsigned lo, unsigned hi, unsigned flags) {
  long r = shim_perform(c);
  int err = errno;
  if (r != 0 || (flags & CLOSE_RANGE_CLOEXEC) != 0 || !rs_ready()) return r;
  for (unsigned fd = lo; fd <= hi && fd < RT_MAX_FD; ++fd) {
    int idx = rs_fd_path((int)fd);
    if (idx < 0) continue;
    drop_device_fd((int)fd);
    struct rs_rec w;
    uint64_t t0 = rt_now_ns();
    begin_log(&w, RP_CLOSE, 0, (int)fd, idx);
    end_log(&w, 0, 0, RP_OUT_FREELIKE, -1, t0);
  }
  errno = err;
  return r;
}

long beh_dup(struct shim_call* c, int oldfd, int newfd) {
  int idx = rs_fd_path(oldfd);
  int replaced = newfd >= 0 && newfd != oldfd && rs_fd_path(newfd) >= 0;
  if ((idx < 0 && !replaced) || !rs_ready()) return shim_perform(c);
  if (idx < 0) {
    long r = shim_perform(c);
    if (r >= 0) drop_device_fd((int)r); /* another file put over a device fd */
    return r;
  }
  rt_t.busy = 1;
  uint64_t t0 = rt_now_ns();
  struct rs_match m = match_fd_call(RP_DUP, idx);
  int err = 0;
  long r;
  if (recorded_failure(&m, &err)) {
    r = -1;
  } else {
    if (replaced) drop_device_fd(newfd);
    r = shim_perform(c);
    err = errno;
    if (r >= 0) {
      long fl = RT_SYS(SYS_fcntl, r, F_GETFD, 0);
      rs_fd_set((int)r, idx, fl >= 0 && (fl & FD_CLOEXEC));
    }
  }
  struct rs_rec w;
  begin_log(&w, RP_DUP, 0, oldfd, idx);
  end_log(&w, r, err, m.event >= 0 ? m.outcome : RP_OUT_PASSED, m.event, t0);
  return answered(r, err);
}

/* ---- mappings ---- */

long beh_mmap(struct shim_call* c, uint64_t addr, uint64_t len, int prot, int flags, int fd,
              uint64_t off) {
  int idx = (flags & MAP_ANONYMOUS) ? -1 : rs_fd_path(fd);
  if (idx < 0 || !rs_ready()) return shim_perform(c);
  int busy = rt_t.busy;
  rt_t.busy = 1;
  uint64_t t0 = rt_now_ns();
  struct rs_match m = busy ? (struct rs_match){-1, 0} : match_fd_call(RP_MMAP, idx);
  int err = 0;
  long r;
  if (recorded_failure(&m, &err)) {
    r = -1;
  } else {
    /* The replay hands out the memory: shared, so that forked children see it as a device
     * mapping would be seen. */
    int fl =
        (flags & ~(MAP_PRIVATE | MAP_SHARED_VALIDATE | MAP_SHARED)) | MAP_SHARED | MAP_ANONYMOUS;
    r = rt_sys6(SYS_mmap, (long)addr, (long)len, prot, fl, -1, 0);
    if (RT_FAILED(r)) {
      err = (int)-r;
      r = -1;
    } else {
      rs_gpu_mmap(idx, fd, off, (uint64_t)r, len);
    }
  }
  struct rs_rec w;
  begin_log(&w, RP_MMAP, 0, fd, idx);
  if (w.r) {
    w.r->addr = addr;
    w.r->len = len;
    w.r->prot = (uint64_t)(unsigned)prot;
    w.r->flags = (uint64_t)(unsigned)flags;
    w.r->off = off;
  }
  end_log(&w, r, err, m.event >= 0 ? m.outcome : RP_OUT_PASSED, m.event, t0);
  rs_progress();
  rt_t.busy = busy;
  errno = err;
  return r;
}

long beh_munmap(struct shim_call* c, uint64_t addr, uint64_t len) {
  if (!rs_ready()) return shim_perform(c);
  int idx = -1;
  int was_device = rs_gpu_munmap_query(addr, len, &idx);
  if (!was_device) return shim_perform(c);
  int err = 0;
  long r = rs_gpu_munmap(c, addr, len, &err);
  if (rt_t.busy) {
    errno = err;
    return r;
  }
  rt_t.busy = 1;
  uint64_t t0 = rt_now_ns();
  struct rs_match m = idx >= 0 ? match_fd_call(RP_MUNMAP, idx) : (struct rs_match){-1, 0};
  struct rs_rec w;
  begin_log(&w, RP_MUNMAP, 0, -1, idx);
  if (w.r) {
    w.r->addr = addr;
    w.r->len = len;
  }
  end_log(&w, r, err, m.event >= 0 ? m.outcome : RP_OUT_FREELIKE, m.event, t0);
  rt_t.busy = 0;
  errno = err;
  return r;
}

long beh_fstat(struct shim_call* c, int fd) {
  int idx = rs_fd_path(fd);
  if (idx < 0 || !rs_ready()) return shim_perform(c);
  const struct rp_env* e = rs_env_device(rs_path(idx));
  void* buf = (void*)c->a[c->kind == SHIM_C_FSTAT || c->kind == SHIM_C_FSTAT64 ? 1 : 2];
  rs_fill_stat(buf, e);
  return 0;
}
