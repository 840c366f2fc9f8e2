/* The driver's view of the system during a replay (docs/replay.md, "Environment"):
 *   - device nodes (the recording's device paths, /dev/char/195:N aliases) are answered, never
 *     touched: stat says character device with the recorded (or documented) numbers, mknod,
 *     symlink, chmod, chown, unlink and mkdir of them succeed without doing anything, and a
 *     device path the recording never opened does not exist;
 *   - paths under the environment globs (/proc/driver/nvidia, /sys/module/nvidia*,
 *     /sys/bus/pci/devices, …) are redirected into the private tree cudatool built for the run,
 *     so that read(), fgets() and scandir() work natively;
 *   - nvidia-modprobe is never run: an exec of it exits 0, a posix_spawn of it spawns a child
 *     that exits 0 at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../base/glob_match.h"
#include "replay_shim.h"

static const struct rp_env* env_list(void) {
  return (const struct rp_env*)((const char*)rs.t + rs.t->off_env);
}

const struct rp_env* rs_env_device(const char* abs) {
  const struct rp_env* e = env_list();
  for (uint32_t i = 0; i < rs.t->n_env; ++i) {
    if ((e[i].flags & RP_ENV_DEVICE) && strcmp(rs_str(e[i].path), abs) == 0) return &e[i];
  }
  return NULL;
}

int rs_env_redirect(const char* abs, char* out, size_t cap) {
  if (rs.env_globs == NULL || rs.env_globs[0] == '\0' || rs.root == NULL) return 0;
  if (!nvtr_glob_list_match(rs.env_globs, abs)) return 0;
  size_t r = strlen(rs.root), n = strlen(abs);
  if (r + n + 1 > cap) return 0;
  memcpy(out, rs.root, r);
  memcpy(out + r, abs, n + 1);
  return 1;
}

void rs_fill_stat(void* buf, const struct rp_env* e) {
  struct stat* s = (struct stat*)buf;
  if (s == NULL) return;
  memset(s, 0, sizeof *s);
  s->st_dev = makedev(0, 6);
  s->st_ino = e != NULL ? 0x10000u + (uint32_t)(e - env_list()) : 0x1ffffu;
  s->st_mode = e != NULL ? e->mode : (S_IFCHR | 0666);
  s->st_nlink = 1;
  s->st_rdev = e != NULL ? e->rdev : makedev(195, 255);
  s->st_blksize = 4096;
}

static void fill_statx(void* buf, const struct rp_env* e) {
  struct statx* x = (struct statx*)buf;
  if (x == NULL) return;
  memset(x, 0, sizeof *x);
  x->stx_mask = STATX_BASIC_STATS;
  x->stx_blksize = 4096;
  x->stx_nlink = 1;
  x->stx_mode = (uint16_t)(e != NULL ? e->mode : (S_IFCHR | 0666));
  x->stx_ino = e != NULL ? 0x10000u + (uint32_t)(e - env_list()) : 0x1ffffu;
  uint64_t rdev = e != NULL ? e->rdev : makedev(195, 255);
  x->stx_rdev_major = major(rdev);
  x->stx_rdev_minor = minor(rdev);
  x->stx_dev_minor = 6;
}

static int is_modprobe(const char* path) {
  const char* b = path != NULL ? strrchr(path, '/') : NULL;
  b = b != NULL ? b + 1 : path;
  return b != NULL && strcmp(b, "nvidia-modprobe") == 0;
}

/* A device node the replay answers for: a recorded device path, an alias of one, or a path the
 * recording's device globs name (which then does not exist). */
enum { kNotDevice = 0, kDevice = 1, kNoDevice = 2 };
static int device_kind(const char* abs, const struct rp_env** e) {
  *e = rs_env_device(abs);
  if (*e != NULL) return kDevice;
  if (strncmp(abs, "/dev/char/", 10) == 0) return kNoDevice;
  if (nvtr_glob_list_match(rs_str(rs.t->devices), abs)) return kNoDevice;
  return kNotDevice;
}

static void log_env(const char* abs, long ret, int err, int op) {
  struct rs_rec w;
  if (!rs_log_begin(&w, RP_LOG_ENV, strlen(abs) + 1)) return;
  w.r->req = (uint32_t)op;
  w.r->ret = ret;
  w.r->err = ret == -1 ? err : 0;
  w.r->outcome = RP_OUT_ENV;
  rs_log_text(&w, abs);
  rs_log_commit(&w);
}

static long answer(const char* abs, long ret, int err, int op) {
  if (!rt_t.busy) {
    rt_t.busy = 1;
    log_env(abs, ret, err, op);
    rt_t.busy = 0;
  }
  errno = err;
  return ret;
}

/* The struct stat (or statx) buffer of a stat-family call. */
static void* stat_buffer(const struct shim_call* c) {
  switch (c->kind) {
    case SHIM_C_STAT:
    case SHIM_C_STAT64:
    case SHIM_C_LSTAT:
    case SHIM_C_LSTAT64:
      return (void*)c->a[1];
    case SHIM_C_XSTAT:
    case SHIM_C_XSTAT64:
    case SHIM_C_LXSTAT:
    case SHIM_C_LXSTAT64:
    case SHIM_C_FSTATAT:
    case SHIM_C_FSTATAT64:
      return (void*)c->a[2];
    case SHIM_C_FXSTATAT:
    case SHIM_C_FXSTATAT64:
      return (void*)c->a[3];
    case SHIM_C_STATX:
      return (void*)c->a[4];
    default:
      return NULL;
  }
}

static long spawn_nothing(const struct shim_call* c) {
  /* posix_spawn(pid, path, …): a child that exits 0 at once stands for nvidia-modprobe. */
  long pid = RT_SYS(SYS_fork, 0, 0, 0);
  if (pid == 0) RT_SYS(SYS_exit_group, 0, 0, 0);
  if (pid < 0) return -pid;
  if (c->a[0] != 0) *(pid_t*)c->a[0] = (pid_t)pid;
  return 0;
}

long beh_path(struct shim_call* c) {
  const struct shim_fn_info* f = &shim_fn[c->kind];
  if (!rs_ready() || f->path < 0) return shim_perform(c);
  const char* path = (const char*)c->a[f->path];
  int dirfd = f->dirfd >= 0 ? (int)c->a[f->dirfd] : AT_FDCWD;
  char abs[PATH_MAX];
  if (!rt_path_absolute(dirfd, path, abs, sizeof abs)) return shim_perform(c);
  if (f->op == OP_EXEC && is_modprobe(abs)) {
    if (c->kind == SHIM_C_POSIX_SPAWN) return answer(abs, spawn_nothing(c), 0, f->op);
    answer(abs, 0, 0, f->op);
    RT_SYS(SYS_exit_group, 0, 0, 0);
  }
  const struct rp_env* e = NULL;
  int dk = device_kind(abs, &e);
  if (dk != kNotDevice) {
    switch (f->op) {
      case OP_STAT:
      case OP_LSTAT:
        if (dk == kNoDevice) return answer(abs, -1, ENOENT, f->op);
        if (c->kind == SHIM_C_STATX) {
          fill_statx(stat_buffer(c), e);
        } else {
          rs_fill_stat(stat_buffer(c), e);
        }
        return answer(abs, 0, 0, f->op);
      case OP_ACCESS:
        return dk == kDevice ? answer(abs, 0, 0, f->op) : answer(abs, -1, ENOENT, f->op);
      case OP_MKNOD:
      case OP_SYMLINK:
      case OP_CHMOD:
      case OP_CHOWN:
      case OP_UNLINK:
      case OP_MKDIR:
        return answer(abs, 0, 0, f->op); /* answered, never carried out */
      case OP_READLINK:
        return answer(abs, -1, dk == kDevice ? EINVAL : ENOENT, f->op);
      case OP_FOPEN:
      case OP_OPENDIR:
      case OP_REALPATH:
        if (dk == kNoDevice) {
          answer(abs, -1, ENOENT, f->op);
          errno = ENOENT;
          return 0; /* NULL */
        }
        break;
      default:
        break;
    }
  }
  char redirected[PATH_MAX];
  if (rs_env_redirect(abs, redirected, sizeof redirected)) {
    struct shim_call d = *c;
    d.a[f->path] = (long)redirected;
    if (f->dirfd >= 0) d.a[f->dirfd] = AT_FDCWD;
    long r = shim_perform(&d);
    int err = errno;
    int failed =
        (f->op == OP_FOPEN || f->op == OP_OPENDIR || f->op == OP_REALPATH) ? r == 0 : r == -1;
    answer(abs, failed ? -1 : 0, err, f->op);
    errno = err;
    return r;
  }
  if (dk == kDevice && (f->op == OP_FOPEN || f->op == OP_OPENDIR)) {
    /* fopen of a device node: through the replay's own open. */
    errno = EACCES;
    return 0;
  }
  long r = shim_perform(c);
  if (f->op == OP_FOPEN && r != 0) { /* a module loaded through stdio (RP_LOG_IMAGE) */
    int saved = errno;
    rs_log_cuda_image(fileno((FILE*)r), abs);
    errno = saved;
  }
  return r;
}
