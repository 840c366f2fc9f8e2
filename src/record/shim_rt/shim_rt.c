/* The shim runtime (shim_rt.h): memory access that never faults, per-thread scratch memory, the
 * pid across fork, and paths. Raw system calls only: nothing here goes through the functions the
 * shims interpose, and nothing calls up into a shim's behaviour. */
#define _GNU_SOURCE
#include "shim_rt.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

__thread struct rt_tls rt_t __attribute__((tls_model("initial-exec")));
int rt_pid;
static pthread_key_t scratch_key;

/* ---- start, fork ---- */

static void scratch_release(int slot) {
  if (rt_t.scratch[slot] != NULL) RT_SYS(SYS_munmap, rt_t.scratch[slot], rt_t.scratch_cap[slot], 0);
  rt_t.scratch[slot] = NULL;
  rt_t.scratch_cap[slot] = 0;
}

/* The destructor of the scratch key: runs in the thread that ends. */
static void scratch_free(void* p) {
  (void)p;
  for (int slot = 0; slot < RT_SCRATCH_SLOTS; ++slot) scratch_release(slot);
}

void rt_start(void) {
  rt_pid = (int)RT_SYS(SYS_getpid, 0, 0, 0);
  pthread_key_create(&scratch_key, scratch_free);
}

int rt_forked_child(void) {
  int parent = rt_pid;
  rt_pid = (int)RT_SYS(SYS_getpid, 0, 0, 0);
  rt_t.tid = rt_pid; /* the child's one thread; its stack is the same mapping as before */
  return parent;
}

/* ---- memory ---- */

uint64_t rt_vm_copy(int pid, int write, uint64_t addr, void* local, uint64_t n, int* err) {
  uint64_t done = 0;
  if (err != NULL) *err = 0;
  while (done < n) {
    /* One remote iovec per page, so that the kernel stops exactly at the first bad page. */
    struct iovec remote[64];
    int k = 0;
    uint64_t a = addr + done, left = n - done, planned = 0;
    while (k < 64 && left > 0) {
      uint64_t take = 4096 - (a % 4096);
      if (take > left) take = left;
      remote[k].iov_base = (void*)(uintptr_t)a;
      remote[k].iov_len = take;
      ++k;
      a += take;
      left -= take;
      planned += take;
    }
    struct iovec l = {(char*)local + done, planned};
    long r = rt_sys6(write ? SYS_process_vm_writev : SYS_process_vm_readv, pid, (long)&l, 1,
                     (long)remote, k, 0);
    if (r < 0) {
      if (err != NULL) *err = (int)-r;
      break;
    }
    done += (uint64_t)r;
    if ((uint64_t)r < planned) {
      if (err != NULL) *err = EFAULT;
      break;
    }
  }
  return done;
}

int rt_stack_range(uint64_t sp, uint64_t* lo, uint64_t* hi) {
  if (rt_t.stack_hi == 0 || sp < rt_t.stack_lo || sp >= rt_t.stack_hi) {
    /* Once per thread, and again only a few times if the thread moves to another stack. */
    if (rt_t.stack_probes >= 8) return 0;
    ++rt_t.stack_probes;
    uint64_t l = 0, h = 0;
    if (!rt_maps_find(sp, &l, &h)) return 0;
    rt_t.stack_lo = l;
    rt_t.stack_hi = h;
  }
  *lo = rt_t.stack_lo;
  *hi = rt_t.stack_hi;
  return 1;
}

/* How many of the n bytes at addr lie in [sp, top of this thread's stack mapping), where plain
 * copies are safe; `bounded`: however few, else all or none. */
static uint64_t on_stack(uint64_t addr, uint64_t n, int bounded) {
  volatile char here = 0;
  uint64_t sp = (uint64_t)(uintptr_t)&here, lo, hi;
  if (addr < sp || !rt_stack_range(sp, &lo, &hi) || addr >= hi) return 0;
  uint64_t avail = hi - addr;
  if (n <= avail) return n;
  return bounded ? avail : 0;
}

uint64_t rt_read(uint64_t addr, void* dst, uint64_t n, int bounded, int* err) {
  if (err != NULL) *err = 0;
  if (n == 0) return 0;
  if (addr == 0 || addr + n < addr) {
    if (err != NULL) *err = EFAULT;
    return 0;
  }
  uint64_t take = on_stack(addr, n, bounded);
  if (take > 0) {
    memcpy(dst, (const void*)(uintptr_t)addr, take);
    return take;
  }
  /* The kernel copies, page by page, and stops at the first unreadable page. */
  return rt_vm_copy(rt_pid, 0, addr, dst, n, err);
}

uint64_t rt_write(uint64_t addr, const void* src, uint64_t n) {
  if (n == 0 || addr == 0 || addr + n < addr) return 0;
  if (on_stack(addr, n, 0) == n) {
    memcpy((void*)(uintptr_t)addr, src, n);
    return n;
  }
  return rt_vm_copy(rt_pid, 1, addr, (void*)src, n, NULL);
}

int rt_maps_find(uint64_t addr, uint64_t* lo_out, uint64_t* hi_out) {
  long fd = RT_SYS(SYS_open, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  char buf[4096];
  uint64_t lo = 0, hi = 0;
  int field = 0; /* 0: lo, 1: hi, 2: rest of line */
  int found = 0;
  long n;
  while (!found && (n = RT_SYS(SYS_read, fd, buf, sizeof buf)) > 0) {
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
        if (field == 1 && addr >= lo && addr < hi) found = 1;
        field = 2;
      }
    }
  }
  RT_SYS(SYS_close, fd, 0, 0);
  if (!found) return 0;
  *lo_out = lo;
  *hi_out = hi;
  return 1;
}

/* ---- scratch ---- */

uint8_t* rt_scratch(int slot, size_t n, int keep) {
  if (n <= rt_t.scratch_cap[slot]) return rt_t.scratch[slot];
  size_t cap = 1 << 16;
  while (cap < n) cap <<= 1;
  long p;
  if (rt_t.scratch[slot] != NULL && keep) {
    p = rt_sys6(SYS_mremap, (long)rt_t.scratch[slot], (long)rt_t.scratch_cap[slot], (long)cap,
                MREMAP_MAYMOVE, 0, 0);
  } else {
    scratch_release(slot);
    p = rt_sys6(SYS_mmap, 0, (long)cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  if (RT_FAILED(p)) {
    if (keep) scratch_release(slot);
    return NULL;
  }
  rt_t.scratch[slot] = (uint8_t*)p;
  rt_t.scratch_cap[slot] = cap;
  pthread_setspecific(scratch_key, rt_t.scratch[slot]); /* frees it when the thread ends */
  return rt_t.scratch[slot];
}

void rt_scratch_trim(size_t keep_bytes) {
  for (int slot = 0; slot < RT_SCRATCH_SLOTS; ++slot) {
    if (rt_t.scratch_cap[slot] > keep_bytes) scratch_release(slot);
  }
}

/* ---- paths ---- */

/* "." and ".." folded textually; repeated slashes dropped. */
static void path_fold(char* p) {
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

/* The directory `dirfd` names (AT_FDCWD: the working one) into abs[cap]: its length, or <= 0. */
static long dir_of(int dirfd, char* abs, size_t cap) {
  if (dirfd == AT_FDCWD) {
    long b = RT_SYS(SYS_getcwd, abs, cap, 0);
    return b > 0 ? (long)strlen(abs) : b;
  }
  if (dirfd < 0) return -1;
  char link[32] = "/proc/self/fd/";
  int k = 14, v = dirfd, d = 0;
  char digits[12];
  do {
    digits[d++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0 && d < 11);
  while (d > 0) link[k++] = digits[--d];
  link[k] = '\0';
  long b = RT_SYS(SYS_readlink, link, abs, cap - 1);
  if (b > 0) abs[b] = '\0';
  return b;
}

int rt_path_absolute(int dirfd, const char* path, char* abs, size_t cap) {
  if (path == NULL || cap == 0 || cap > PATH_MAX) return 0;
  size_t n = strnlen(path, cap);
  if (n >= cap) return 0;
  if (path[0] == '/') {
    memcpy(abs, path, n + 1);
  } else {
    long b = dir_of(dirfd, abs, cap);
    if (b <= 0 || (size_t)b + n + 2 >= cap) return 0;
    abs[b] = '/';
    memcpy(abs + b + 1, path, n + 1);
  }
  path_fold(abs);
  return 1;
}
