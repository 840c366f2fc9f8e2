/* The replay shim's state (replay_shim.h): the run's files once mapped, the device paths and the
 * device fds of this process, the handle map. Calls only the shim runtime. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "replay_shim.h"

__thread struct rs_tls rs_t __attribute__((tls_model("initial-exec"))) = {-1, 0};
struct rs_run rs;

/* ---- paths ---- */

int rs_device_index(const char* abs) {
  for (uint32_t i = 0; i < rs.t->n_paths; ++i) {
    if (strcmp(rs_path((int)i), abs) == 0) return (int)i;
  }
  return -1;
}

/* ---- device fds ---- */

static struct rt_fd_table fd_path; /* fd -> device path index */

int rs_fd_path(int fd) {
  return rt_fd_get(&fd_path, fd);
}

/* The shared table: so that an exec'd image of this process knows its device fds. */
static void share_fd(int fd, int path, int cloexec) {
  struct rp_state* st = rs.st;
  rt_lock(&st->lock);
  int free_slot = -1, done = 0;
  for (int i = 0; i < RP_MAX_FDS && !done; ++i) {
    struct rp_fd_entry* e = &st->fds[i];
    if (e->pid == rt_pid && e->fd == fd) {
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
    st->fds[free_slot] = (struct rp_fd_entry){rt_pid, fd, path, cloexec};
  }
  rt_unlock(&st->lock);
}

void rs_fd_set(int fd, int path, int cloexec) {
  if (fd < 0 || fd >= RT_MAX_FD) return;
  rt_fd_put(&fd_path, fd, path);
  share_fd(fd, path, cloexec);
}

void rs_fd_clear(int fd) {
  if (rs_fd_path(fd) < 0) return;
  rt_fd_put(&fd_path, fd, -1);
  share_fd(fd, -1, 0);
}

/* After exec: the device fds this process still has (not close-on-exec, still sockets). */
void rs_fds_restore(void) {
  struct rp_state* st = rs.st;
  rt_lock(&st->lock);
  for (int i = 0; i < RP_MAX_FDS; ++i) {
    struct rp_fd_entry* e = &st->fds[i];
    if (e->pid != rt_pid) continue;
    struct stat sb;
    long r = RT_SYS(SYS_fstat, e->fd, &sb, 0);
    if (e->cloexec || r != 0 || !S_ISSOCK(sb.st_mode) || e->fd < 0 || e->fd >= RT_MAX_FD) {
      e->pid = 0;
      continue;
    }
    rt_fd_put(&fd_path, e->fd, e->path);
  }
  rt_unlock(&st->lock);
}

void rs_fds_share_all(void) {
  for (int fd = 0; fd < RT_MAX_FD; ++fd) {
    int p = rs_fd_path(fd);
    if (p < 0) continue;
    long fl = RT_SYS(SYS_fcntl, fd, F_GETFD, 0);
    share_fd(fd, p, fl >= 0 && (fl & FD_CLOEXEC));
  }
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
  rt_lock(&hmap_lock);
  for (uint32_t i = hslot(live), k = 0; k < HMAP_SIZE; ++k, i = (i + 1) & (HMAP_SIZE - 1)) {
    uint64_t v = atomic_load_explicit(&hmap[i], memory_order_relaxed);
    if (v == 0 || (uint32_t)(v >> 32) == live) {
      if (v == 0 && recorded == live) break; /* identity: nothing to remember */
      atomic_store_explicit(&hmap[i], (uint64_t)live << 32 | recorded, memory_order_release);
      break;
    }
  }
  rt_unlock(&hmap_lock);
}
