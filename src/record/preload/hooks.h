/*
 * The interposition layer of the preload shims: every libc function a shim takes over, in one
 * list, and the behaviour interface those functions call.
 *
 * One layer, two behaviours (ARCHITECTURE.md): hooks.c defines the exported functions (ioctl,
 * the open family, close, dup, fcntl, mmap, munmap, syscall, and the calls that look at the
 * driver's view of the system: the stat family, access, mknod, symlink, readlink, chmod, unlink,
 * fopen, opendir, scandir, realpath, exec). Each packs its arguments into a `struct shim_call`
 * and hands it to the behaviour linked with it:
 *   - recording (libcudatool_preload.so, src/record/preload/record_calls.c): performs the call
 *     and records it when it concerns a device or the environment;
 *   - replaying (src/replay/): answers device calls from a trace and redirects environment paths.
 * The behaviour performs the real call, when it wants to, with shim_perform().
 *
 * Plain C with no C++ runtime: it runs inside arbitrary programs.
 */
#ifndef CUDATOOL_PRELOAD_HOOKS_H
#define CUDATOOL_PRELOAD_HOOKS_H

#include <stdint.h>

/* X(kind, name, ret, path, dirfd, path2, op)
 *   ret   R_INT: the function returns int (sign-extended); R_LONG: a long, pointer or ssize_t
 *   path  index in a[] of the path the call names, -1 when none
 *   dirfd index in a[] of the directory fd the path is relative to, -1: AT_FDCWD
 *   path2 index of a second path (symlink: the target, which names nothing to look up), -1
 *   op    what the call does to the path (enum shim_path_op)
 */
#define SHIM_HOOKS(X)                                                                     \
  /* device calls */                                                                      \
  X(IOCTL, ioctl, R_INT, -1, -1, -1, OP_NONE)                                             \
  X(OPEN, open, R_INT, 0, -1, -1, OP_OPEN)                                                \
  X(OPEN64, open64, R_INT, 0, -1, -1, OP_OPEN)                                            \
  X(OPEN_2, __open_2, R_INT, 0, -1, -1, OP_OPEN)                                          \
  X(OPEN64_2, __open64_2, R_INT, 0, -1, -1, OP_OPEN)                                      \
  X(OPENAT, openat, R_INT, 1, 0, -1, OP_OPEN)                                             \
  X(OPENAT64, openat64, R_INT, 1, 0, -1, OP_OPEN)                                         \
  X(OPENAT_2, __openat_2, R_INT, 1, 0, -1, OP_OPEN)                                       \
  X(OPENAT64_2, __openat64_2, R_INT, 1, 0, -1, OP_OPEN)                                   \
  X(CREAT, creat, R_INT, 0, -1, -1, OP_OPEN)                                              \
  X(CREAT64, creat64, R_INT, 0, -1, -1, OP_OPEN)                                          \
  X(CLOSE, close, R_INT, -1, -1, -1, OP_NONE)                                             \
  X(CLOSE_RANGE, close_range, R_INT, -1, -1, -1, OP_NONE)                                 \
  X(DUP, dup, R_INT, -1, -1, -1, OP_NONE)                                                 \
  X(DUP2, dup2, R_INT, -1, -1, -1, OP_NONE)                                               \
  X(DUP3, dup3, R_INT, -1, -1, -1, OP_NONE)                                               \
  X(FCNTL, fcntl, R_INT, -1, -1, -1, OP_NONE)                                             \
  X(FCNTL64, fcntl64, R_INT, -1, -1, -1, OP_NONE)                                         \
  X(MMAP, mmap, R_LONG, -1, -1, -1, OP_NONE)                                              \
  X(MMAP64, mmap64, R_LONG, -1, -1, -1, OP_NONE)                                          \
  X(MUNMAP, munmap, R_INT, -1, -1, -1, OP_NONE)                                           \
  X(SYSCALL, syscall, R_LONG, -1, -1, -1, OP_NONE)                                        \
  /* stat of a path (glibc >= 2.33 exports stat & co; older programs and libcuda call the \
   * versioned __xstat family, whose first argument is the struct version) */             \
  X(STAT, stat, R_INT, 0, -1, -1, OP_STAT)                                                \
  X(STAT64, stat64, R_INT, 0, -1, -1, OP_STAT)                                            \
  X(LSTAT, lstat, R_INT, 0, -1, -1, OP_LSTAT)                                             \
  X(LSTAT64, lstat64, R_INT, 0, -1, -1, OP_LSTAT)                                         \
  X(XSTAT, __xstat, R_INT, 1, -1, -1, OP_STAT)                                            \
  X(XSTAT64, __xstat64, R_INT, 1, -1, -1, OP_STAT)                                        \
  X(LXSTAT, __lxstat, R_INT, 1, -1, -1, OP_LSTAT)                                         \
  X(LXSTAT64, __lxstat64, R_INT, 1, -1, -1, OP_LSTAT)                                     \
  X(FSTATAT, fstatat, R_INT, 1, 0, -1, OP_STAT)                                           \
  X(FSTATAT64, fstatat64, R_INT, 1, 0, -1, OP_STAT)                                       \
  X(FXSTATAT, __fxstatat, R_INT, 2, 1, -1, OP_STAT)                                       \
  X(FXSTATAT64, __fxstatat64, R_INT, 2, 1, -1, OP_STAT)                                   \
  X(STATX, statx, R_INT, 1, 0, -1, OP_STAT)                                               \
  /* stat of an fd */                                                                     \
  X(FSTAT, fstat, R_INT, -1, -1, -1, OP_FSTAT)                                            \
  X(FSTAT64, fstat64, R_INT, -1, -1, -1, OP_FSTAT)                                        \
  X(FXSTAT, __fxstat, R_INT, -1, -1, -1, OP_FSTAT)                                        \
  X(FXSTAT64, __fxstat64, R_INT, -1, -1, -1, OP_FSTAT)                                    \
  /* other looks at, and changes to, paths */                                             \
  X(ACCESS, access, R_INT, 0, -1, -1, OP_ACCESS)                                          \
  X(EUIDACCESS, euidaccess, R_INT, 0, -1, -1, OP_ACCESS)                                  \
  X(EACCESS, eaccess, R_INT, 0, -1, -1, OP_ACCESS)                                        \
  X(FACCESSAT, faccessat, R_INT, 1, 0, -1, OP_ACCESS)                                     \
  X(MKNOD, mknod, R_INT, 0, -1, -1, OP_MKNOD)                                             \
  X(MKNODAT, mknodat, R_INT, 1, 0, -1, OP_MKNOD)                                          \
  X(XMKNOD, __xmknod, R_INT, 1, -1, -1, OP_MKNOD)                                         \
  X(XMKNODAT, __xmknodat, R_INT, 2, 1, -1, OP_MKNOD)                                      \
  X(SYMLINK, symlink, R_INT, 1, -1, 0, OP_SYMLINK)                                        \
  X(SYMLINKAT, symlinkat, R_INT, 2, 1, 0, OP_SYMLINK)                                     \
  X(READLINK, readlink, R_LONG, 0, -1, -1, OP_READLINK)                                   \
  X(READLINKAT, readlinkat, R_LONG, 1, 0, -1, OP_READLINK)                                \
  X(CHMOD, chmod, R_INT, 0, -1, -1, OP_CHMOD)                                             \
  X(FCHMODAT, fchmodat, R_INT, 1, 0, -1, OP_CHMOD)                                        \
  X(CHOWN, chown, R_INT, 0, -1, -1, OP_CHOWN)                                             \
  X(LCHOWN, lchown, R_INT, 0, -1, -1, OP_CHOWN)                                           \
  X(UNLINK, unlink, R_INT, 0, -1, -1, OP_UNLINK)                                          \
  X(UNLINKAT, unlinkat, R_INT, 1, 0, -1, OP_UNLINK)                                       \
  X(REMOVE, remove, R_INT, 0, -1, -1, OP_UNLINK)                                          \
  X(MKDIR, mkdir, R_INT, 0, -1, -1, OP_MKDIR)                                             \
  X(RMDIR, rmdir, R_INT, 0, -1, -1, OP_UNLINK)                                            \
  /* opening through libc's internal open (not interposable: the call itself is) */       \
  X(FOPEN, fopen, R_LONG, 0, -1, -1, OP_FOPEN)                                            \
  X(FOPEN64, fopen64, R_LONG, 0, -1, -1, OP_FOPEN)                                        \
  X(OPENDIR, opendir, R_LONG, 0, -1, -1, OP_OPENDIR)                                      \
  X(SCANDIR, scandir, R_INT, 0, -1, -1, OP_OPENDIR)                                       \
  X(SCANDIR64, scandir64, R_INT, 0, -1, -1, OP_OPENDIR)                                   \
  X(REALPATH, realpath, R_LONG, 0, -1, -1, OP_REALPATH)                                   \
  /* programs run by a path (libcuda runs nvidia-modprobe, which creates device nodes) */ \
  X(EXECV, execv, R_INT, 0, -1, -1, OP_EXEC)                                              \
  X(EXECVE, execve, R_INT, 0, -1, -1, OP_EXEC)                                            \
  X(POSIX_SPAWN, posix_spawn, R_INT, 1, -1, -1, OP_EXEC)

enum shim_ret { R_INT, R_LONG };

enum shim_path_op {
  OP_NONE,
  OP_OPEN,     /* open/openat/creat: the device calls' own path */
  OP_STAT,     /* stat, __xstat, fstatat, statx (follows symlinks unless the flags say not) */
  OP_LSTAT,    /* lstat, __lxstat */
  OP_FSTAT,    /* fstat of an fd (a[0], or a[1] for __fxstat*) */
  OP_ACCESS,   /* access, faccessat */
  OP_MKNOD,    /* mknod, mknodat, __xmknod (dev by pointer), __xmknodat */
  OP_SYMLINK,  /* symlink(target, path): `path` is the link made */
  OP_READLINK, /* readlink */
  OP_CHMOD,    /* chmod, fchmodat */
  OP_CHOWN,    /* chown, lchown */
  OP_UNLINK,   /* unlink, unlinkat, remove, rmdir */
  OP_MKDIR,    /* mkdir */
  OP_FOPEN,    /* fopen: returns FILE* */
  OP_OPENDIR,  /* opendir (returns DIR*), scandir */
  OP_REALPATH, /* realpath: returns char* */
  OP_EXEC      /* execv, execve, posix_spawn */
};

enum shim_kind {
#define SHIM_KIND_ENUM(k, name, ret, path, dirfd, path2, op) SHIM_C_##k,
  SHIM_HOOKS(SHIM_KIND_ENUM)
#undef SHIM_KIND_ENUM
      SHIM_C_COUNT
};

struct shim_fn_info {
  const char* name;
  int8_t ret;   /* enum shim_ret */
  int8_t path;  /* index of the path argument, -1 */
  int8_t dirfd; /* index of the directory fd, -1 (AT_FDCWD) */
  int8_t path2; /* index of a second path, -1 */
  int8_t op;    /* enum shim_path_op */
};

extern const struct shim_fn_info shim_fn[SHIM_C_COUNT] __attribute__((visibility("hidden")));

/* One call as the program made it: which function, and its (at most six) integer or pointer
 * arguments, as they arrive in registers (x86-64 SysV). `nr` is syscall()'s number. */
struct shim_call {
  int kind; /* enum shim_kind */
  long nr;
  long a[6];
};

#define SHIM_HOOK_API __attribute__((visibility("hidden")))

/* Performs the call as the program asked for it, through the next definition of the function
 * (libc's, or another interposer's); returns its result, errno as libc sets it. A behaviour may
 * change c->a[] first (e.g. point a path elsewhere). */
SHIM_HOOK_API long shim_perform(const struct shim_call* c);

/* ---- the behaviour: defined once by each shim (record_calls.c, or the replay's) ---- */
SHIM_HOOK_API long beh_ioctl(struct shim_call* c, int fd, unsigned long req, uint64_t arg,
                             int via_syscall);
SHIM_HOOK_API long beh_open(struct shim_call* c, int dirfd, const char* path, uint64_t flags);
SHIM_HOOK_API long beh_close(struct shim_call* c, int fd);
SHIM_HOOK_API long beh_close_range(struct shim_call* c, unsigned lo, unsigned hi, unsigned flags);
/* dup, dup2, dup3, fcntl(F_DUPFD*): newfd -1 when the call picks it. */
SHIM_HOOK_API long beh_dup(struct shim_call* c, int oldfd, int newfd);
SHIM_HOOK_API long beh_mmap(struct shim_call* c, uint64_t addr, uint64_t len, int prot, int flags,
                            int fd, uint64_t off);
SHIM_HOOK_API long beh_munmap(struct shim_call* c, uint64_t addr, uint64_t len);
/* Every call whose shim_fn[].op is not OP_NONE/OP_OPEN/OP_FSTAT: the path is
 * (const char*)c->a[shim_fn[c->kind].path], relative to c->a[dirfd] when dirfd >= 0. */
SHIM_HOOK_API long beh_path(struct shim_call* c);
/* fstat family: the fd is c->a[0] (fstat, fstat64) or c->a[1] (__fxstat, __fxstat64). */
SHIM_HOOK_API long beh_fstat(struct shim_call* c, int fd);

#endif /* CUDATOOL_PRELOAD_HOOKS_H */
