/* The interposition layer (hooks.h): the exported functions, each packing its arguments into a
 * shim_call for the behaviour linked with it (perform.c makes the call itself, for the
 * behaviour). Nothing here records or answers anything. */
#define _GNU_SOURCE
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>

#ifdef __clang__
/* The hooks declare libc's functions with their ABI types (void* for FILE*, DIR*, struct stat*),
 * deliberately without <stdio.h>, <dirent.h>, <sys/stat.h>, whose prototypes would not match. */
#pragma clang diagnostic ignored "-Wbuiltin-requires-header"
#endif

#define EXPORT __attribute__((visibility("default")))

#define CALL(k, ...) struct shim_call c = {SHIM_C_##k, 0, {__VA_ARGS__}}

/* ---- device calls ---- */

EXPORT int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  CALL(IOCTL, fd, (long)req, (long)arg);
  return (int)beh_ioctl(&c, fd, req, (uint64_t)(uintptr_t)arg, 0);
}

static int open_mode(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name, kind)                                  \
  EXPORT int name(const char* path, int flags, ...) {          \
    va_list ap;                                                \
    va_start(ap, flags);                                       \
    int mode = open_mode(flags, ap);                           \
    va_end(ap);                                                \
    CALL(kind, (long)path, flags, mode);                       \
    return (int)beh_open(&c, AT_FDCWD, path, (unsigned)flags); \
  }
OPEN_LIKE(open, OPEN)
OPEN_LIKE(open64, OPEN64)

#define OPENAT_LIKE(name, kind)                                  \
  EXPORT int name(int dirfd, const char* path, int flags, ...) { \
    va_list ap;                                                  \
    va_start(ap, flags);                                         \
    int mode = open_mode(flags, ap);                             \
    va_end(ap);                                                  \
    CALL(kind, dirfd, (long)path, flags, mode);                  \
    return (int)beh_open(&c, dirfd, path, (unsigned)flags);      \
  }
OPENAT_LIKE(openat, OPENAT)
OPENAT_LIKE(openat64, OPENAT64)

EXPORT int __open_2(const char* path, int flags) {
  CALL(OPEN_2, (long)path, flags);
  return (int)beh_open(&c, AT_FDCWD, path, (unsigned)flags);
}
EXPORT int __open64_2(const char* path, int flags) {
  CALL(OPEN64_2, (long)path, flags);
  return (int)beh_open(&c, AT_FDCWD, path, (unsigned)flags);
}
EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  CALL(OPENAT_2, dirfd, (long)path, flags);
  return (int)beh_open(&c, dirfd, path, (unsigned)flags);
}
EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  CALL(OPENAT64_2, dirfd, (long)path, flags);
  return (int)beh_open(&c, dirfd, path, (unsigned)flags);
}
EXPORT int creat(const char* path, mode_t mode) {
  CALL(CREAT, (long)path, (long)mode);
  return (int)beh_open(&c, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);
}
EXPORT int creat64(const char* path, mode_t mode) {
  CALL(CREAT64, (long)path, (long)mode);
  return (int)beh_open(&c, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC);
}

EXPORT int close(int fd) {
  CALL(CLOSE, fd);
  return (int)beh_close(&c, fd);
}
EXPORT int close_range(unsigned lo, unsigned hi, int flags) {
  CALL(CLOSE_RANGE, (long)lo, (long)hi, flags);
  return (int)beh_close_range(&c, lo, hi, (unsigned)flags);
}
EXPORT int dup(int fd) {
  CALL(DUP, fd);
  return (int)beh_dup(&c, fd, -1);
}
EXPORT int dup2(int fd, int newfd) {
  CALL(DUP2, fd, newfd);
  return (int)beh_dup(&c, fd, newfd);
}
EXPORT int dup3(int fd, int newfd, int flags) {
  CALL(DUP3, fd, newfd, flags);
  return (int)beh_dup(&c, fd, newfd);
}

#define FCNTL_LIKE(name, kind)                                                     \
  EXPORT int name(int fd, int cmd, ...) {                                          \
    va_list ap;                                                                    \
    va_start(ap, cmd);                                                             \
    void* arg = va_arg(ap, void*);                                                 \
    va_end(ap);                                                                    \
    CALL(kind, fd, cmd, (long)arg);                                                \
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) return (int)beh_dup(&c, fd, -1); \
    return (int)shim_perform(&c);                                                  \
  }
FCNTL_LIKE(fcntl, FCNTL)
FCNTL_LIKE(fcntl64, FCNTL64)

EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  CALL(MMAP, (long)addr, (long)len, prot, flags, fd, (long)off);
  return (void*)beh_mmap(&c, (uint64_t)(uintptr_t)addr, len, prot, flags, fd, (uint64_t)off);
}
EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  CALL(MMAP64, (long)addr, (long)len, prot, flags, fd, (long)off);
  return (void*)beh_mmap(&c, (uint64_t)(uintptr_t)addr, len, prot, flags, fd, (uint64_t)off);
}
EXPORT int munmap(void* addr, size_t len) {
  CALL(MUNMAP, (long)addr, (long)len);
  return (int)beh_munmap(&c, (uint64_t)(uintptr_t)addr, len);
}

/* syscall(): the route a build would take to bypass libc's ioctl(). */
EXPORT long syscall(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(ap, long);
  va_end(ap);
  struct shim_call c = {SHIM_C_SYSCALL, nr, {a[0], a[1], a[2], a[3], a[4], a[5]}};
  switch (nr) {
    case SYS_ioctl:
      return beh_ioctl(&c, (int)a[0], (unsigned long)a[1], (uint64_t)a[2], 1);
    case SYS_open:
      return beh_open(&c, AT_FDCWD, (const char*)a[0], (uint64_t)(unsigned)a[1]);
    case SYS_openat:
      return beh_open(&c, (int)a[0], (const char*)a[1], (uint64_t)(unsigned)a[2]);
    case SYS_creat:
      return beh_open(&c, AT_FDCWD, (const char*)a[0], O_CREAT | O_WRONLY | O_TRUNC);
    case SYS_close:
      return beh_close(&c, (int)a[0]);
    case SYS_close_range:
      return beh_close_range(&c, (unsigned)a[0], (unsigned)a[1], (unsigned)a[2]);
    case SYS_dup:
      return beh_dup(&c, (int)a[0], -1);
    case SYS_dup2:
    case SYS_dup3:
      return beh_dup(&c, (int)a[0], (int)a[1]);
    case SYS_fcntl:
      if ((int)a[1] == F_DUPFD || (int)a[1] == F_DUPFD_CLOEXEC) return beh_dup(&c, (int)a[0], -1);
      return shim_perform(&c);
    case SYS_mmap:
      return beh_mmap(&c, (uint64_t)a[0], (uint64_t)a[1], (int)a[2], (int)a[3], (int)a[4],
                      (uint64_t)a[5]);
    case SYS_munmap:
      return beh_munmap(&c, (uint64_t)a[0], (uint64_t)a[1]);
    default:
      return shim_perform(&c);
  }
}

/* ---- calls that name a path, and fstat: fixed argument lists, one macro per arity ---- */

#define PATH_HOOK1(k, ret, name, t0) \
  EXPORT ret name(t0 x0) {           \
    CALL(k, (long)x0);               \
    return (ret)beh_path(&c);        \
  }
#define PATH_HOOK2(k, ret, name, t0, t1) \
  EXPORT ret name(t0 x0, t1 x1) {        \
    CALL(k, (long)x0, (long)x1);         \
    return (ret)beh_path(&c);            \
  }
#define PATH_HOOK3(k, ret, name, t0, t1, t2) \
  EXPORT ret name(t0 x0, t1 x1, t2 x2) {     \
    CALL(k, (long)x0, (long)x1, (long)x2);   \
    return (ret)beh_path(&c);                \
  }
#define PATH_HOOK4(k, ret, name, t0, t1, t2, t3)     \
  EXPORT ret name(t0 x0, t1 x1, t2 x2, t3 x3) {      \
    CALL(k, (long)x0, (long)x1, (long)x2, (long)x3); \
    return (ret)beh_path(&c);                        \
  }
#define PATH_HOOK5(k, ret, name, t0, t1, t2, t3, t4)           \
  EXPORT ret name(t0 x0, t1 x1, t2 x2, t3 x3, t4 x4) {         \
    CALL(k, (long)x0, (long)x1, (long)x2, (long)x3, (long)x4); \
    return (ret)beh_path(&c);                                  \
  }
#define PATH_HOOK6(k, ret, name, t0, t1, t2, t3, t4, t5)                 \
  EXPORT ret name(t0 x0, t1 x1, t2 x2, t3 x3, t4 x4, t5 x5) {            \
    CALL(k, (long)x0, (long)x1, (long)x2, (long)x3, (long)x4, (long)x5); \
    return (ret)beh_path(&c);                                            \
  }

/* The struct pointers are passed through untouched: void* keeps the prototypes independent of
 * the struct versions (__xstat's `ver` selects the layout; x86-64 has one). */
typedef const char* cstr;
typedef void* vptr;

PATH_HOOK2(STAT, int, stat, cstr, vptr)
PATH_HOOK2(STAT64, int, stat64, cstr, vptr)
PATH_HOOK2(LSTAT, int, lstat, cstr, vptr)
PATH_HOOK2(LSTAT64, int, lstat64, cstr, vptr)
PATH_HOOK3(XSTAT, int, __xstat, int, cstr, vptr)
PATH_HOOK3(XSTAT64, int, __xstat64, int, cstr, vptr)
PATH_HOOK3(LXSTAT, int, __lxstat, int, cstr, vptr)
PATH_HOOK3(LXSTAT64, int, __lxstat64, int, cstr, vptr)
PATH_HOOK4(FSTATAT, int, fstatat, int, cstr, vptr, int)
PATH_HOOK4(FSTATAT64, int, fstatat64, int, cstr, vptr, int)
PATH_HOOK5(FXSTATAT, int, __fxstatat, int, int, cstr, vptr, int)
PATH_HOOK5(FXSTATAT64, int, __fxstatat64, int, int, cstr, vptr, int)
PATH_HOOK5(STATX, int, statx, int, cstr, int, unsigned, vptr)

EXPORT int fstat(int fd, void* buf) {
  CALL(FSTAT, fd, (long)buf);
  return (int)beh_fstat(&c, fd);
}
EXPORT int fstat64(int fd, void* buf) {
  CALL(FSTAT64, fd, (long)buf);
  return (int)beh_fstat(&c, fd);
}
EXPORT int __fxstat(int ver, int fd, void* buf) {
  CALL(FXSTAT, ver, fd, (long)buf);
  return (int)beh_fstat(&c, fd);
}
EXPORT int __fxstat64(int ver, int fd, void* buf) {
  CALL(FXSTAT64, ver, fd, (long)buf);
  return (int)beh_fstat(&c, fd);
}

PATH_HOOK2(ACCESS, int, access, cstr, int)
PATH_HOOK2(EUIDACCESS, int, euidaccess, cstr, int)
PATH_HOOK2(EACCESS, int, eaccess, cstr, int)
PATH_HOOK4(FACCESSAT, int, faccessat, int, cstr, int, int)
PATH_HOOK3(MKNOD, int, mknod, cstr, mode_t, dev_t)
PATH_HOOK4(MKNODAT, int, mknodat, int, cstr, mode_t, dev_t)
PATH_HOOK4(XMKNOD, int, __xmknod, int, cstr, mode_t, vptr)
PATH_HOOK5(XMKNODAT, int, __xmknodat, int, int, cstr, mode_t, vptr)
PATH_HOOK2(SYMLINK, int, symlink, cstr, cstr)
PATH_HOOK3(SYMLINKAT, int, symlinkat, cstr, int, cstr)
PATH_HOOK3(READLINK, ssize_t, readlink, cstr, char*, size_t)
PATH_HOOK4(READLINKAT, ssize_t, readlinkat, int, cstr, char*, size_t)
PATH_HOOK2(CHMOD, int, chmod, cstr, mode_t)
PATH_HOOK4(FCHMODAT, int, fchmodat, int, cstr, mode_t, int)
PATH_HOOK3(CHOWN, int, chown, cstr, uid_t, gid_t)
PATH_HOOK3(LCHOWN, int, lchown, cstr, uid_t, gid_t)
PATH_HOOK1(UNLINK, int, unlink, cstr)
PATH_HOOK3(UNLINKAT, int, unlinkat, int, cstr, int)
PATH_HOOK1(REMOVE, int, remove, cstr)
PATH_HOOK2(MKDIR, int, mkdir, cstr, mode_t)
PATH_HOOK1(RMDIR, int, rmdir, cstr)
PATH_HOOK2(FOPEN, vptr, fopen, cstr, cstr)
PATH_HOOK2(FOPEN64, vptr, fopen64, cstr, cstr)
PATH_HOOK1(OPENDIR, vptr, opendir, cstr)
PATH_HOOK4(SCANDIR, int, scandir, cstr, vptr, vptr, vptr)
PATH_HOOK4(SCANDIR64, int, scandir64, cstr, vptr, vptr, vptr)
PATH_HOOK2(REALPATH, char*, realpath, cstr, char*)
typedef char* const* argvp;
PATH_HOOK2(EXECV, int, execv, cstr, argvp)
PATH_HOOK3(EXECVE, int, execve, cstr, argvp, argvp)
PATH_HOOK6(POSIX_SPAWN, int, posix_spawn, vptr, cstr, vptr, vptr, vptr, vptr)
