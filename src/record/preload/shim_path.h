/* Path resolution shared by the recording shim (src/record/preload) and the replay shim
 * (src/replay/shim): the absolute form of a path as a *at() call names it, with "." and ".."
 * folded textually (as the ptrace recorder does, devices.cpp absolute_path). Plain C, raw system
 * calls only (the shims interpose libc's), nothing allocated. Also the stack mapping lookup in
 * /proc/self/maps both use. */
#ifndef CUDATOOL_PRELOAD_SHIM_PATH_H
#define CUDATOOL_PRELOAD_SHIM_PATH_H

#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

static inline long shim_path_sys3(long n, long a1, long a2, long a3) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a1), "S"(a2), "d"(a3)
                   : "rcx", "r11", "memory");
  return ret;
}

/* "." and ".." folded textually; repeated slashes dropped. */
static inline void shim_path_fold(char* p) {
  char out[PATH_MAX];
  size_t o = 0;
  const char* s = p;
  while (*s != '\0') {
    while (*s == '/') ++s;
    const char* e = s;
    while (*e != '\0' && *e != '/') ++e;
    size_t n = (size_t)(e - s);
    if (n == 0) break;
    if (n == 1 && s[0] == '.') {
    } else if (n == 2 && s[0] == '.' && s[1] == '.') {
      while (o > 0 && out[o - 1] != '/') --o;
      if (o > 0) --o;
    } else if (o + n + 2 < sizeof out) {
      out[o++] = '/';
      memcpy(out + o, s, n);
      o += n;
    }
    s = e;
  }
  if (o == 0) out[o++] = '/';
  out[o] = '\0';
  memcpy(p, out, o + 1);
}

/* `path` relative to `dirfd` (AT_FDCWD: the working directory) as an absolute, folded path in
 * abs[cap] (cap at most PATH_MAX). 0 when it cannot be formed (NULL, too long, a bad dirfd). */
static inline int shim_path_absolute(int dirfd, const char* path, char* abs, size_t cap) {
  if (path == NULL || cap == 0 || cap > PATH_MAX) return 0;
  size_t n = strnlen(path, cap);
  if (n >= cap) return 0;
  if (path[0] == '/') {
    memcpy(abs, path, n + 1);
  } else {
    long b;
    if (dirfd == AT_FDCWD) {
      b = shim_path_sys3(SYS_getcwd, (long)abs, (long)cap, 0);
      b = b > 0 ? (long)strlen(abs) : b;
    } else {
      if (dirfd < 0) return 0;
      char link[32] = "/proc/self/fd/";
      int k = 14, v = dirfd, d = 0;
      char digits[12];
      do {
        digits[d++] = (char)('0' + v % 10);
        v /= 10;
      } while (v > 0 && d < 11);
      while (d > 0) link[k++] = digits[--d];
      link[k] = '\0';
      b = shim_path_sys3(SYS_readlink, (long)link, (long)abs, (long)(cap - 1));
      if (b > 0) abs[b] = '\0';
    }
    if (b <= 0 || (size_t)b + n + 2 >= cap) return 0;
    abs[b] = '/';
    memcpy(abs + b + 1, path, n + 1);
  }
  shim_path_fold(abs);
  return 1;
}

/* The mapping of /proc/self/maps that holds `sp` (a thread's stack): 1 and its range, or 0.
 * Shared by both shims, which bound the reads of stack-resident buffers by it. */
static inline int shim_maps_find(uint64_t sp, uint64_t* lo_out, uint64_t* hi_out) {
  long fd = shim_path_sys3(SYS_open, (long)"/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  char buf[4096];
  uint64_t lo = 0, hi = 0;
  int field = 0; /* 0: lo, 1: hi, 2: rest of line */
  int found = 0;
  long n;
  while (!found && (n = shim_path_sys3(SYS_read, fd, (long)buf, sizeof buf)) > 0) {
    for (long i = 0; i < n && !found; ++i) {
      char c = buf[i];
      if (c == '\n') {
        field = 0;
        lo = hi = 0;
        continue;
      }
      if (field == 2) continue;
      int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (v >= 0) {
        if (field == 0) {
          lo = lo << 4 | (uint64_t)v;
        } else {
          hi = hi << 4 | (uint64_t)v;
        }
      } else if (field == 0 && c == '-') {
        field = 1;
      } else {
        if (field == 1 && sp >= lo && sp < hi) found = 1;
        field = 2;
      }
    }
  }
  shim_path_sys3(SYS_close, fd, 0, 0);
  if (!found) return 0;
  *lo_out = lo;
  *hi_out = hi;
  return 1;
}

#endif
