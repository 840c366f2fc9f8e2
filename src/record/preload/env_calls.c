/* The recording behaviour for calls on environment paths (hooks.h: beh_path, beh_fstat, and the
 * opens of beh_open that name no device): what the program asked about the driver's view of the
 * system, as the environment events of docs/trace-format.md (stat, file, mknod, symlink, readlink,
 * chmod, unlink).
 *
 * Every call is performed first, as the program made it, and only then looked at: a call the
 * kernel refused with EFAULT (a path it could not read) is not recorded, so the shim never reads
 * a path that the kernel could not. Nothing is ever blocked or changed. Opened files are read by
 * the shim itself (its own descriptor, not the program's, whose offset stays where it was) right
 * after the program opened them: procfs and sysfs generate their content at read time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "hooks.h"
#include "shim.h"

/* Bounds of what the recorder reads of an environment file or directory (docs/tracing.md). */
#define ENV_CONTENT_MAX (64u << 10)
#define ENV_NAMES_MAX (256u << 10)

/* The path each fd was opened with on an environment path, for fstat (as the program named it:
 * /proc/self/fd would give it resolved through symlinks). One slot per fd, in a table mapped on
 * the first such open (address space only: a page is touched for every 16 fds used). Paths that
 * do not fit a slot are not kept (fstat of such an fd is not recorded). */
#define ENV_MAX_FD 65536
#define ENV_FD_PATH 256
static char* _Atomic env_fd_paths;

static char* fd_slot(int fd, int create) {
  if (fd < 0 || fd >= ENV_MAX_FD) return NULL;
  char* t = atomic_load_explicit(&env_fd_paths, memory_order_acquire);
  if (t == NULL) {
    if (!create) return NULL;
    long p = rt_sys6(SYS_mmap, 0, (long)ENV_MAX_FD * ENV_FD_PATH, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (RT_FAILED(p)) return NULL;
    char* expected = NULL;
    if (atomic_compare_exchange_strong(&env_fd_paths, &expected, (char*)p)) {
      t = (char*)p;
    } else {
      SHIM_SYS(SYS_munmap, p, (long)ENV_MAX_FD * ENV_FD_PATH, 0);
      t = expected;
    }
  }
  return t + (size_t)fd * ENV_FD_PATH;
}

void shim_env_fd_set(int fd, const char* abs) {
  size_t n = strlen(abs);
  char* slot = fd_slot(fd, n < ENV_FD_PATH);
  if (slot == NULL) return;
  if (n >= ENV_FD_PATH) {
    slot[0] = '\0';
    return;
  }
  memcpy(slot, abs, n + 1);
}

void shim_env_fd_clear(int fd) {
  char* slot = fd_slot(fd, 0);
  if (slot != NULL && slot[0] != '\0') slot[0] = '\0';
}

static void env_begin(struct shim_event* ev, int sys, const struct shim_call* c, uint64_t t0) {
  memset(ev, 0, offsetof(struct shim_event, bufs));
  ev->sys = sys;
  ev->pid = rt_pid;
  ev->tid = rt_tid();
  ev->fd = -1;
  ev->op = shim_fn[c->kind].name;
  ev->t = t0;
}

/* ret as the trace records it: pointer results (fopen, opendir, realpath) are 0 or -1. */
static void env_finish(struct shim_event* ev, long r, int err, int failed) {
  ev->dur = shim_now() - ev->t;
  ev->has_dur = 1;
  ev->ret = failed ? -1 : r;
  ev->err = failed ? err : 0;
}

/* The answer of a successful stat: from glibc's struct stat (the kernel's on x86-64). */
static void answer_from_stat(struct shim_event* ev, const void* p) {
  struct stat st;
  memcpy(&st, p, sizeof st);
  ev->mode = st.st_mode;
  ev->rdev = st.st_rdev;
  ev->st_size = (uint64_t)st.st_size;
  ev->has_stat = 1;
}

static void answer_from_statx(struct shim_event* ev, const void* p) {
  struct statx sx;
  memcpy(&sx, p, sizeof sx);
  uint64_t ma = sx.stx_rdev_major, mi = sx.stx_rdev_minor;
  ev->mode = sx.stx_mode;
  /* dev_t as glibc's makedev encodes it (sys/sysmacros.h). */
  ev->rdev = ((ma & 0xfffff000ULL) << 32) | ((ma & 0xfffULL) << 8) | ((mi & 0xffffff00ULL) << 12) |
             (mi & 0xffULL);
  ev->st_size = sx.stx_size;
  ev->has_stat = 1;
}

/* ---- what an opened file holds ---- */

/* Shell sort of n name offsets by the names (no allocation, no libc qsort: it may malloc). */
static void sort_names(uint32_t* at, uint32_t n, const char* names) {
  for (uint32_t gap = n / 2; gap > 0; gap /= 2) {
    for (uint32_t i = gap; i < n; ++i) {
      uint32_t v = at[i], j = i;
      while (j >= gap && strcmp(names + at[j - gap], names + v) > 0) {
        at[j] = at[j - gap];
        j -= gap;
      }
      at[j] = v;
    }
  }
}

/* The names of directory fd, sorted, without . and .., into scratch slot 0. */
static void read_entries(struct shim_event* ev, long fd) {
  uint64_t used = 0, count = 0;
  char dents[4096];
  long n;
  while ((n = SHIM_SYS(SYS_getdents64, fd, dents, sizeof dents)) > 0) {
    for (long off = 0; off + 19 < n;) {
      unsigned short reclen;
      memcpy(&reclen, dents + off + 16, 2);
      if (reclen == 0 || reclen > n - off) break;
      const char* name = dents + off + 19;
      size_t len = strnlen(name, (size_t)(reclen - 19));
      off += reclen;
      if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) continue;
      if (used + len + 1 > ENV_NAMES_MAX) {
        ev->entries_truncated = 1;
        continue;
      }
      uint8_t* s = rt_scratch(0, used + len + 1, 1);
      if (s == NULL) {
        ev->entries_truncated = 1;
        continue;
      }
      memcpy(s + used, name, len);
      s[used + len] = '\0';
      used += len + 1;
      ++count;
    }
  }
  if (n < 0) ev->content_err = (int)-n;
  /* Offsets after the names (4-aligned), then the names again in sorted order. */
  uint64_t idx_at = (used + 3) & ~3ULL;
  uint8_t* s = rt_scratch(0, idx_at + 4 * count + used + 1, 1);
  if (s == NULL) {
    ev->entries_truncated = 1;
    return;
  }
  uint32_t* at = (uint32_t*)(void*)(s + idx_at);
  uint64_t k = 0;
  for (uint64_t p = 0; p < used; p += strlen((const char*)s + p) + 1) at[k++] = (uint32_t)p;
  sort_names(at, (uint32_t)count, (const char*)s);
  char* out = (char*)s + idx_at + 4 * count;
  uint64_t o = 0;
  for (uint64_t i = 0; i < count; ++i) {
    size_t len = strlen((const char*)s + at[i]) + 1;
    memcpy(out + o, s + at[i], len);
    o += len;
  }
  ev->entries = out;
  ev->entries_len = o;
  ev->has_entries = 1;
}

/* Up to ENV_CONTENT_MAX bytes of regular file fd into scratch slot 0 (one more to know whether
 * there is more). */
static void read_content(struct shim_event* ev, long fd) {
  uint8_t* buf = rt_scratch(0, ENV_CONTENT_MAX + 1, 0);
  ev->has_content = 1;
  if (buf == NULL) {
    ev->content_err = ENOMEM;
    return;
  }
  uint64_t got = 0;
  while (got <= ENV_CONTENT_MAX) {
    long r = SHIM_SYS(SYS_read, fd, buf + got, ENV_CONTENT_MAX + 1 - got);
    if (r == -EINTR) continue;
    if (r < 0) {
      ev->content_err = (int)-r;
      break;
    }
    if (r == 0) break;
    got += (uint64_t)r;
  }
  if (got > ENV_CONTENT_MAX) {
    got = ENV_CONTENT_MAX;
    ev->content_bounded = 1;
  }
  if (got > 0) ev->content_err = 0; /* a prefix was read: that is the content */
  ev->content = buf;
  ev->content_len = got;
}

/* What the program opened at abs: its stat answer, and the bytes of a regular file (when the
 * program opened it for reading) or the names of a directory. Only regular files and
 * directories are opened: opening a FIFO or a device node has effects of its own. */
static void read_object(struct shim_event* ev, const char* abs, int want_content) {
  struct stat st;
  long r = SHIM_SYS(SYS_stat, abs, &st, 0);
  if (r < 0) {
    if (want_content) {
      ev->has_content = 1;
      ev->content_err = (int)-r;
    }
    return;
  }
  ev->mode = st.st_mode;
  ev->rdev = st.st_rdev;
  ev->st_size = (uint64_t)st.st_size;
  ev->has_stat = 1;
  int dir = S_ISDIR(st.st_mode);
  if (!dir && !(want_content && S_ISREG(st.st_mode))) return;
  long fd = SHIM_SYS(SYS_open, abs,
                     O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (dir ? O_DIRECTORY : 0), 0);
  if (fd < 0) {
    ev->has_content = !dir;
    ev->content_err = (int)-fd;
    return;
  }
  if (dir) {
    read_entries(ev, fd);
  } else {
    read_content(ev, fd);
  }
  SHIM_SYS(SYS_close, fd, 0, 0);
}

/* fopen's mode string as the open(2) flags glibc's fopen passes (libio/fileops.c). */
static uint64_t fopen_flags(const char* m) {
  int acc = O_RDONLY, extra = 0;
  switch (m[0]) {
    case 'r':
      acc = O_RDONLY;
      break;
    case 'w':
      acc = O_WRONLY;
      extra = O_CREAT | O_TRUNC;
      break;
    case 'a':
      acc = O_WRONLY;
      extra = O_CREAT | O_APPEND;
      break;
    default:
      return 0;
  }
  for (int i = 1; i < 7 && m[i] != '\0' && m[i] != ','; ++i) {
    if (m[i] == '+') acc = O_RDWR;
    if (m[i] == 'x') extra |= O_EXCL;
    if (m[i] == 'e') extra |= O_CLOEXEC;
  }
  return (uint64_t)(unsigned)(acc | extra);
}

/* ---- the calls ---- */

/* glibc's opendir (and scandir, which uses it): O_RDONLY|O_NONBLOCK|O_DIRECTORY|O_CLOEXEC. */
#define OPENDIR_FLAGS (O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC)

static int readable(uint64_t flags) {
  return (flags & O_ACCMODE) != O_WRONLY && (flags & O_PATH) == 0;
}

long shim_env_open(struct shim_call* c, int dirfd, const char* path, uint64_t flags) {
  uint64_t t0 = shim_now();
  long r = shim_perform(c);
  int err = errno;
  if (path == NULL || (r == -1 && err == EFAULT)) {
    errno = err;
    return r;
  }
  char abs[PATH_MAX];
  if (!shim_abs_path(dirfd, path, abs) || !shim_env_match(abs)) {
    if (r >= 0) shim_env_fd_clear((int)r); /* a stale slot of an fd closed unseen */
    errno = err;
    return r;
  }
  if (rt_t.busy) { /* a signal handler interrupted the shim in this thread */
    shim_count(&shim_ctl->lost);
    errno = err;
    return r;
  }
  rt_t.busy = 1;
  struct shim_event ev;
  env_begin(&ev, SHIM_FILE, c, t0);
  ev.path = abs;
  ev.flags = flags;
  env_finish(&ev, r, err, r == -1);
  if (r >= 0) {
    shim_env_fd_set((int)r, abs);
    read_object(&ev, abs, readable(flags));
  }
  shim_emit(&ev);
  shim_scratch_trim();
  rt_t.busy = 0;
  errno = err;
  return r;
}

static void copy_string(char* dst, const char* src, size_t n) {
  size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/* A stat of an fd (fstat, or fstatat/statx with AT_EMPTY_PATH) that was opened on a device or an
 * environment path: recorded with the fd's path. `buf` is the program's struct stat (statx: its
 * struct statx). */
static void fd_stat(const struct shim_call* c, int fd, uint64_t t0, long r, int err,
                    const void* buf) {
  int idx = shim_dev_of_fd(fd);
  const char* slot = idx >= 0 ? NULL : fd_slot(fd, 0);
  if (idx < 0 && (slot == NULL || slot[0] == '\0')) return;
  char path[ENV_FD_PATH];
  copy_string(path, idx >= 0 ? shim_path(idx) : slot, sizeof path);
  if (!shim_env_match(path)) return;
  if (rt_t.busy) { /* a signal handler interrupted the shim in this thread */
    shim_count(&shim_ctl->lost);
    return;
  }
  rt_t.busy = 1;
  struct shim_event ev;
  env_begin(&ev, SHIM_STAT, c, t0);
  ev.path = path;
  ev.fd = fd;
  env_finish(&ev, r, err, r == -1);
  if (r == 0 && c->kind == SHIM_C_STATX) {
    answer_from_statx(&ev, buf);
  } else if (r == 0) {
    answer_from_stat(&ev, buf);
  }
  shim_emit(&ev);
  rt_t.busy = 0;
}

/* The *at() flags of a call (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, AT_REMOVEDIR, …), 0 for none. */
static uint64_t at_flags_of(const struct shim_call* c) {
  switch (c->kind) {
    case SHIM_C_FSTATAT:
    case SHIM_C_FSTATAT64:
    case SHIM_C_FACCESSAT:
    case SHIM_C_FCHMODAT:
      return (uint64_t)(unsigned)c->a[3];
    case SHIM_C_FXSTATAT:
    case SHIM_C_FXSTATAT64:
      return (uint64_t)(unsigned)c->a[4];
    case SHIM_C_STATX:
    case SHIM_C_UNLINKAT:
      return (uint64_t)(unsigned)c->a[2];
    default:
      return 0;
  }
}

/* The argument that holds a stat-family call's struct stat (statx: its struct statx). */
static const void* stat_buffer(const struct shim_call* c) {
  int k = c->kind;
  int at = k == SHIM_C_STATX                                  ? 4
           : (k == SHIM_C_FXSTATAT || k == SHIM_C_FXSTATAT64) ? 3
           : (k == SHIM_C_STAT || k == SHIM_C_STAT64 || k == SHIM_C_LSTAT || k == SHIM_C_LSTAT64)
               ? 1
               : 2;
  return (const void*)c->a[at];
}

/* A call that made a device node or a directory: its mode and device number. */
static void fill_mknod(struct shim_event* ev, const struct shim_call* c) {
  int k = c->kind;
  if (k == SHIM_C_MKDIR) {
    ev->mode = S_IFDIR | ((uint64_t)(unsigned)c->a[1] & 07777);
  } else if (k == SHIM_C_MKNOD || k == SHIM_C_MKNODAT) {
    ev->mode = (uint64_t)(unsigned)c->a[k == SHIM_C_MKNOD ? 1 : 2];
    ev->rdev = (uint64_t)c->a[k == SHIM_C_MKNOD ? 2 : 3];
  } else {
    ev->mode = (uint64_t)(unsigned)c->a[k == SHIM_C_XMKNOD ? 2 : 3];
    int rerr = 0;
    uint64_t dev = 0;
    if (rt_read((uint64_t)c->a[k == SHIM_C_XMKNOD ? 3 : 4], (uint8_t*)&dev, 8, 0, &rerr) == 8) {
      ev->rdev = dev;
    }
  }
}

/* A call on an environment path, performed: what it asked and what it was answered. */
struct path_call {
  const struct shim_call* c;
  const struct shim_fn_info* fi;
  uint64_t t0;
  long r;
  int failed;
  uint64_t at_flags;
  char* target; /* PATH_MAX bytes for symlink and readlink targets */
};

/* The event of a call on a path, by what the call does; 0 for calls not recorded. */
static int fill_path_event(struct shim_event* ev, const struct path_call* p) {
  const struct shim_call* c = p->c;
  switch (p->fi->op) {
    case OP_STAT:
    case OP_LSTAT:
      env_begin(ev, SHIM_STAT, c, p->t0);
      ev->flags = p->at_flags;
      if (!p->failed && c->kind == SHIM_C_STATX) {
        answer_from_statx(ev, stat_buffer(c));
      } else if (!p->failed) {
        answer_from_stat(ev, stat_buffer(c));
      }
      return 1;
    case OP_ACCESS:
      env_begin(ev, SHIM_STAT, c, p->t0);
      ev->mode = (uint64_t)(unsigned)c->a[c->kind == SHIM_C_FACCESSAT ? 2 : 1];
      ev->flags = p->at_flags;
      return 1;
    case OP_MKNOD:
    case OP_MKDIR:
      env_begin(ev, SHIM_MKNOD, c, p->t0);
      fill_mknod(ev, c);
      return 1;
    case OP_SYMLINK:
      env_begin(ev, SHIM_SYMLINK, c, p->t0);
      if (c->a[p->fi->path2] != 0)
        copy_string(p->target, (const char*)c->a[p->fi->path2], PATH_MAX);
      ev->target = p->target;
      return 1;
    case OP_READLINK:
      env_begin(ev, SHIM_READLINK, c, p->t0);
      if (!p->failed && p->r > 0) {
        size_t n = (size_t)p->r < PATH_MAX - 1 ? (size_t)p->r : PATH_MAX - 1;
        memcpy(p->target, (const char*)c->a[c->kind == SHIM_C_READLINKAT ? 2 : 1], n);
        p->target[n] = '\0';
      }
      ev->target = p->target;
      return 1;
    case OP_REALPATH:
      env_begin(ev, SHIM_READLINK, c, p->t0);
      if (!p->failed) copy_string(p->target, (const char*)p->r, PATH_MAX);
      ev->target = p->target;
      return 1;
    case OP_CHMOD:
      env_begin(ev, SHIM_CHMOD, c, p->t0);
      ev->mode = (uint64_t)(unsigned)c->a[c->kind == SHIM_C_FCHMODAT ? 2 : 1];
      ev->flags = p->at_flags;
      return 1;
    case OP_CHOWN:
      env_begin(ev, SHIM_CHMOD, c, p->t0);
      ev->has_owner = 1;
      ev->uid = (int32_t)(uint32_t)c->a[1];
      ev->gid = (int32_t)(uint32_t)c->a[2];
      return 1;
    case OP_UNLINK:
      env_begin(ev, SHIM_UNLINK, c, p->t0);
      ev->flags = p->at_flags;
      return 1;
    case OP_FOPEN:
    case OP_OPENDIR:
      env_begin(ev, SHIM_FILE, c, p->t0);
      ev->flags = p->fi->op == OP_FOPEN ? fopen_flags((const char*)c->a[1]) : OPENDIR_FLAGS;
      return 1;
    default:
      return 0;
  }
}

/* Records a performed call on the environment path abs (the caller holds `busy`). */
static void record_path_call(const struct path_call* p, const char* abs, int err) {
  char* target = (char*)rt_scratch(0, PATH_MAX, 0); /* symlink and readlink targets */
  if (target == NULL) {
    shim_count(&shim_ctl->lost);
    return;
  }
  target[0] = '\0';
  struct path_call q = *p;
  q.target = target;
  struct shim_event ev;
  if (!fill_path_event(&ev, &q)) return;
  int pointer_ret = p->fi->ret == R_LONG && p->fi->op != OP_READLINK;
  ev.path = abs;
  env_finish(&ev, pointer_ret ? 0 : p->r, err, p->failed);
  if (ev.sys == SHIM_FILE && !p->failed) read_object(&ev, abs, readable(ev.flags));
  shim_emit(&ev);
  shim_scratch_trim();
}

long beh_path(struct shim_call* c) {
  const struct shim_fn_info* fi = &shim_fn[c->kind];
  if (!shim_ready() || !shim_env_on() || fi->path < 0) return shim_perform(c);
  struct path_call p = {c, fi, shim_now(), 0, 0, 0, NULL};
  p.r = shim_perform(c);
  int err = errno;
  int pointer_ret = fi->ret == R_LONG && fi->op != OP_READLINK;
  p.failed = pointer_ret ? p.r == 0 : p.r == -1;
  const char* path = (const char*)c->a[fi->path];
  if (path == NULL || (p.failed && err == EFAULT) || fi->op == OP_EXEC) {
    errno = err;
    return p.r;
  }
  int dirfd = fi->dirfd >= 0 ? (int)c->a[fi->dirfd] : AT_FDCWD;
  p.at_flags = at_flags_of(c);
  char abs[PATH_MAX];
  if (path[0] == '\0') {
    /* fstatat(fd, "", …, AT_EMPTY_PATH), statx alike: a stat of the fd itself. */
    if (fi->op == OP_STAT && (p.at_flags & AT_EMPTY_PATH) != 0) {
      fd_stat(c, dirfd, p.t0, p.r, err, stat_buffer(c));
    }
  } else if (shim_abs_path(dirfd, path, abs) && shim_env_match(abs)) {
    if (rt_t.busy) { /* a signal handler interrupted the shim in this thread */
      shim_count(&shim_ctl->lost);
    } else {
      rt_t.busy = 1;
      record_path_call(&p, abs, err);
      rt_t.busy = 0;
    }
  }
  errno = err;
  return p.r;
}

long beh_fstat(struct shim_call* c, int fd) {
  if (!shim_ready() || !shim_env_on()) return shim_perform(c);
  uint64_t t0 = shim_now();
  long r = shim_perform(c);
  int err = errno;
  int k = c->kind;
  fd_stat(c, fd, t0, r, err, (const void*)c->a[k == SHIM_C_FXSTAT || k == SHIM_C_FXSTAT64 ? 2 : 1]);
  errno = err;
  return r;
}
