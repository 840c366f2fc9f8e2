/* The replay shim's life (replay_shim.h): its start in each program image (the loader runs the
 * constructor; a call that comes first starts it): the answer table, the shared state and the
 * log cudatool made, mapped and checked (src/record/shim_abi/replay_abi.h, "Version rule"); and
 * fork. Above the state, the log and the fake GPU it sets up: nothing below calls back into it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "replay_shim.h"

static struct rt_once once;

static void* map_file(const char* path, int writable, uint64_t* size) {
  if (path == NULL) return NULL;
  long fd = RT_SYS(SYS_open, path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
  if (fd < 0) return NULL;
  struct stat sb;
  void* p = NULL;
  if (RT_SYS(SYS_fstat, fd, &sb, 0) == 0 && sb.st_size > 0) {
    long m = rt_sys6(SYS_mmap, 0, sb.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                     writable ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (!RT_FAILED(m)) {
      p = (void*)m;
      *size = (uint64_t)sb.st_size;
    }
  }
  RT_SYS(SYS_close, fd, 0, 0);
  return p;
}

/* Whether the three files are what this shim reads: magics, the table's version, sizes. */
static int files_usable(const struct rp_table* t, uint64_t tsize, const struct rp_state* st,
                        uint64_t ssize, const struct rp_log_head* lg, uint64_t lsize) {
  return t != NULL && st != NULL && lg != NULL && tsize >= sizeof *t &&
         t->magic == RP_TABLE_MAGIC && t->version == RP_VERSION && t->size == tsize &&
         st->magic == RP_STATE_MAGIC && ssize >= sizeof *st + t->n_events &&
         lg->magic == RP_LOG_MAGIC && lg->capacity <= lsize;
}

static void log_exec(void) {
  const char* fn = (const char*)getauxval(AT_EXECFN);
  if (fn == NULL) fn = "";
  struct rs_rec w;
  if (!rs_log_begin(&w, RP_LOG_EXEC, strlen(fn) + 1)) return;
  rs_log_text(&w, fn);
  rs_log_commit(&w);
}

static void atfork_child(void) {
  int parent_tid = rt_t.tid;
  int parent = rt_forked_child();
  rs_t.role = -1;
  if (atomic_load_explicit(&once.state, memory_order_acquire) != RT_READY) return;
  __atomic_fetch_add(&rs.st->processes, 1, __ATOMIC_RELAXED);
  rs_fds_share_all();
  rs_gpu_atfork_child();
  struct rs_rec w;
  if (rs_log_begin(&w, RP_LOG_FORK, 0)) {
    w.r->pid = parent;
    w.r->tid = parent_tid;
    w.r->child = rt_pid;
    w.r->ret = rt_pid;
    rs_log_commit(&w);
  }
}

static void replay_start(void) {
  if (!rt_once_claim(&once)) return;
  uint64_t tsize = 0, ssize = 0, lsize = 0;
  const struct rp_table* t = map_file(getenv(RP_ENV_TABLE), 0, &tsize);
  struct rp_state* st = map_file(getenv(RP_ENV_STATE), 1, &ssize);
  struct rp_log_head* lg = map_file(getenv(RP_ENV_LOG), 1, &lsize);
  if (!files_usable(t, tsize, st, ssize, lg, lsize)) {
    rt_once_done(&once, 0);
    return;
  }
  rs.t = t;
  rs.st = st;
  rs.answered = (uint8_t*)st + sizeof *st;
  rs.log = lg;
  rs.root = rs_str(t->root);
  rs.env_globs = rs_str(t->env_globs);
  rt_start();
  rs_fds_restore();
  pthread_atfork(NULL, NULL, atfork_child);
  __atomic_fetch_add(&st->processes, 1, __ATOMIC_RELAXED);
  rt_once_done(&once, 1);
  log_exec();
}

int rs_ready(void) {
  return rt_once_ready(&once, replay_start);
}

__attribute__((constructor)) static void rs_constructor(void) {
  replay_start();
}
