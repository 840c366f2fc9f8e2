/* The recording shim's life (shim.h): its start in each program image (the loader runs the
 * constructor; a call that comes first starts it), the fds the image inherited, and fork. Above
 * the state and the output it sets up: nothing below calls back into it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>

#include "shim.h"

static struct rt_once once;

/* The forking thread's, between the atfork handlers. */
static __thread struct {
  int tid;    /* of the thread that called fork */
  int locked; /* the prepare handler took the table locks */
} fork_state __attribute__((tls_model("initial-exec")));

/* Device fds this image inherited (exec keeps fds that are not close-on-exec). */
static void scan_fds(void) {
  long dir = SHIM_SYS(SYS_open, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;
  char buf[4096];
  long n;
  while ((n = SHIM_SYS(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      unsigned short reclen;
      memcpy(&reclen, buf + off + 16, 2);
      const char* name = buf + off + 19;
      off += reclen;
      if (name[0] < '0' || name[0] > '9') continue;
      int fd = atoi(name);
      if (fd == (int)dir) continue;
      char link[64] = "/proc/self/fd/", target[PATH_MAX];
      strncat(link, name, sizeof link - 15);
      long t = SHIM_SYS(SYS_readlink, link, target, sizeof target - 1);
      if (t <= 0) continue;
      target[t] = '\0';
      int idx = -1;
      char abs[PATH_MAX];
      if (target[0] == '/' && shim_device_path(AT_FDCWD, target, abs, &idx)) shim_fd_set(fd, idx);
    }
  }
  SHIM_SYS(SYS_close, dir, 0, 0);
}

/* The event of this image's start (execve) or of a fork, as the ptrace recorder writes them. */
static void emit_process_event(int sys, int pid, int tid, const char* path, int child) {
  rt_t.busy = 1;
  struct shim_event ev;
  memset(&ev, 0, sizeof ev);
  ev.sys = sys;
  ev.t = shim_now();
  ev.pid = pid;
  ev.tid = tid;
  ev.path = path;
  ev.child = child;
  ev.ret = child;
  shim_emit(&ev);
  rt_t.busy = 0;
}

/* The tables' locks are held across fork so that the child's copies are consistent. Not when
 * fork is called by a signal handler that interrupted this thread inside the shim: it may hold
 * one of them already. */
static void atfork_prepare(void) {
  fork_state.tid = rt_tid();
  fork_state.locked = !rt_t.busy;
  if (fork_state.locked) shim_tables_lock();
}

static void atfork_parent(void) {
  if (fork_state.locked) shim_tables_unlock();
}

static void atfork_child(void) {
  int parent = rt_forked_child();
  if (fork_state.locked) {
    shim_tables_unlock();
    shim_out_forked_child(); /* other threads' stack records died with them */
  }
  if (!shim_ready() || rt_t.busy) return;
  emit_process_event(SHIM_FORK, parent, fork_state.tid, NULL, rt_pid);
}

static void shim_start(void) {
  if (!rt_once_claim(&once)) return;
  if (!shim_configure()) {
    rt_once_done(&once, 0);
    return;
  }
  rt_start();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  scan_fds();
  shim_count(&shim_ctl->processes);
  rt_once_done(&once, 1);
  /* This image was started by execve: record it as the ptrace recorder does. */
  const char* fn = (const char*)getauxval(AT_EXECFN);
  emit_process_event(SHIM_EXECVE, rt_pid, rt_tid(), fn != NULL ? fn : "", 0);
}

int shim_ready(void) {
  return rt_once_ready(&once, shim_start);
}

__attribute__((constructor)) static void shim_constructor(void) {
  shim_start();
}
