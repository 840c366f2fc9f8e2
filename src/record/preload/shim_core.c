/* The recording's state (shim.h): its configuration (from the launcher's environment and the
 * control block), the device paths and the fds opened on them, the device mappings. Calls only
 * the shim runtime. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "../../base/glob_match.h"
#include "shim.h"

struct cudatool_preload_ctl* shim_ctl;
uint64_t shim_t0_ns;

static char trace_path[PATH_MAX];
static char devices[2048];
static char env_globs[2048]; /* --env: environment paths whose calls are recorded ("" none) */
static uint64_t max_buffer = NVTR_MAX_BUFFER;
static const struct nvtr_uvm_branch* uvm_branch;
static const struct nvtr_rm_branch* rm_branch;

/* fd -> device path index (fds above the runtime's table are not followed). */
static struct rt_fd_table fd_dev;
#define MAX_PATHS 255
static char paths[MAX_PATHS][256];
static int path_kinds[MAX_PATHS];
static _Atomic int npaths;
static uint32_t paths_lock;

#define MAX_MAPS 4096
struct map {
  uint64_t addr, len;
  int idx;
};
static struct map maps[MAX_MAPS];
static int nmaps;
static uint32_t maps_lock;

/* ---- configuration ---- */

/* The control block cudatool made (preload_ctl.h), when its magic (and version) is ours. */
static struct cudatool_preload_ctl* map_ctl(const char* path) {
  long fd = SHIM_SYS(SYS_open, path, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return NULL;
  long p = rt_sys6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  SHIM_SYS(SYS_close, fd, 0, 0);
  if (RT_FAILED(p)) return NULL;
  struct cudatool_preload_ctl* c = (struct cudatool_preload_ctl*)p;
  if (c->magic != CUDATOOL_PRELOAD_MAGIC) {
    SHIM_SYS(SYS_munmap, p, 4096, 0);
    return NULL;
  }
  return c;
}

/* The environment variable `name` into dst[cap]: 0 when it is absent or too long. */
static int copy_env(const char* name, char* dst, size_t cap) {
  const char* v = getenv(name);
  if (v == NULL || strlen(v) >= cap) return 0;
  memcpy(dst, v, strlen(v) + 1);
  return 1;
}

int shim_configure(void) {
  const char* cp = getenv(CUDATOOL_ENV_CTL);
  if (cp == NULL || !copy_env(CUDATOOL_ENV_TRACE, trace_path, sizeof trace_path) ||
      !copy_env(CUDATOOL_ENV_DEVICES, devices, sizeof devices)) {
    return 0;
  }
  copy_env(CUDATOOL_ENV_ENV, env_globs, sizeof env_globs);
  shim_ctl = map_ctl(cp);
  if (shim_ctl == NULL) return 0;
  shim_t0_ns = shim_ctl->t0_ns;
  if (shim_ctl->max_buffer != 0) max_buffer = shim_ctl->max_buffer;
  uvm_branch = nvtr_uvm_branch_for_major((int)shim_ctl->uvm_major);
  rm_branch = nvtr_rm_branch_for_major(uvm_branch->major);
  return 1;
}

const char* shim_trace_path(void) {
  return trace_path;
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

/* ---- device paths and fds ---- */

int shim_dev_of_fd(int fd) {
  return rt_fd_get(&fd_dev, fd);
}
void shim_fd_set(int fd, int idx) {
  rt_fd_put(&fd_dev, fd, idx);
}
void shim_fd_clear(int fd) {
  rt_fd_put(&fd_dev, fd, -1);
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
  rt_lock(&paths_lock);
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
  rt_unlock(&paths_lock);
  return found;
}

int shim_abs_path(int dirfd, const char* path, char* abs) {
  return rt_path_absolute(dirfd, path, abs, PATH_MAX);
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

/* ---- device mappings ---- */

void shim_map_add(uint64_t addr, uint64_t len, int idx) {
  rt_lock(&maps_lock);
  if (nmaps < MAX_MAPS) maps[nmaps++] = (struct map){addr, len, idx};
  rt_unlock(&maps_lock);
}

int shim_map_overlaps(uint64_t addr, uint64_t len) {
  int hit = 0;
  if (nmaps == 0) return 0;
  rt_lock(&maps_lock);
  for (int i = 0; i < nmaps && !hit; ++i) {
    hit = addr < maps[i].addr + maps[i].len && maps[i].addr < addr + len;
  }
  rt_unlock(&maps_lock);
  return hit;
}

int shim_map_remove(uint64_t addr, uint64_t len) {
  int first = -1;
  uint64_t end = addr + len;
  rt_lock(&maps_lock);
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
  rt_unlock(&maps_lock);
  return first;
}

void shim_tables_lock(void) {
  rt_lock(&paths_lock);
  rt_lock(&maps_lock);
}

void shim_tables_unlock(void) {
  rt_unlock(&maps_lock);
  rt_unlock(&paths_lock);
}
