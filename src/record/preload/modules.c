/* The loaded objects of the traced process, for the preload unwinder (unwind.h): their module
 * records (docs/trace-format.md, "Module records"), found with dl_iterate_phdr, whose dlpi_adds
 * and dlpi_subs counters say when the set changed; and the search for the unwind rule of a PC,
 * made inside dl_iterate_phdr's callback so that the loader's lock keeps the object mapped while
 * its .eh_frame is read. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "unwind.h"

#define MAX_MODULES 1024
#define PATH_POOL (256u << 10)

struct mod {
  uint64_t lo, hi, base;
  uint32_t path; /* offset in the pool */
  int emitted;   /* its record is in the trace */
  char build_id[65];
};

static struct mod mods[MAX_MODULES];
static int nmods;
static char pool[PATH_POOL];
static uint32_t pool_used;
static unsigned long long seen_adds, seen_subs;
static int scanned;
static _Atomic uint32_t generation = 1;
static _Atomic uint64_t last_check;
static uint32_t mods_lock;
static uint64_t self_lo, self_hi;
static char exe_path[4096];

static void lock_mods(void) {
  rt_lock(&mods_lock);
}
static void unlock_mods(void) {
  rt_unlock(&mods_lock);
}

static void range_of(const struct dl_phdr_info* info, uint64_t* lo, uint64_t* hi) {
  *lo = ~(uint64_t)0;
  *hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uint64_t a = (info->dlpi_addr + ph->p_vaddr) & ~(uint64_t)4095;
    uint64_t b = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uint64_t)4095;
    if (a < *lo) *lo = a;
    if (b > *hi) *hi = b;
  }
  if (*hi == 0) *lo = 0;
}

/* ---- scanning ---- */

struct scan {
  struct mod found[MAX_MODULES];
  int n;
  char names[MAX_MODULES][512];
};
static struct scan scan_buf; /* used under mods_lock only */

static const char kHexDigits[] = "0123456789abcdef";

/* NT_GNU_BUILD_ID from the object's PT_NOTE segments, in its memory (shim_module_read bounds). */
static void build_id_of(const struct dl_phdr_info* info, char* out) {
  out[0] = '\0';
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    uint64_t p = info->dlpi_addr + ph->p_vaddr, end = p + ph->p_memsz;
    while (p + 12 <= end) {
      uint32_t h[3];
      if (!shim_module_read(p, h, 12)) return;
      uint64_t name = p + 12, desc = name + ((h[0] + 3u) & ~3u);
      uint64_t next = desc + ((h[1] + 3u) & ~3u);
      if (next > end || next <= p) return;
      char nm[4];
      if (h[2] == NT_GNU_BUILD_ID && h[0] == 4 && shim_module_read(name, nm, 4) &&
          memcmp(nm, "GNU", 4) == 0 && h[1] > 0 && h[1] <= 32) {
        uint8_t id[32];
        if (!shim_module_read(desc, id, h[1])) return;
        for (uint32_t k = 0; k < h[1]; ++k) {
          out[2 * k] = kHexDigits[id[k] >> 4];
          out[2 * k + 1] = kHexDigits[id[k] & 15];
        }
        out[2 * h[1]] = '\0';
        return;
      }
      p = next;
    }
  }
}

/* An absolute path for an object: the program's own from /proc/self/exe, a relative dlopen name
 * under the current directory; "" for objects without a file (the vDSO). */
static void path_of(const struct dl_phdr_info* info, char* out, size_t cap) {
  const char* name = info->dlpi_name != NULL ? info->dlpi_name : "";
  out[0] = '\0';
  if (name[0] == '\0') {
    if (exe_path[0] == '\0') {
      long n = SHIM_SYS(SYS_readlink, "/proc/self/exe", exe_path, sizeof exe_path - 1);
      exe_path[n > 0 ? n : 0] = '\0';
    }
    name = exe_path;
  }
  if (name[0] == '/') {
    size_t n = strnlen(name, cap - 1);
    memcpy(out, name, n);
    out[n] = '\0';
  } else if (strchr(name, '/') != NULL) {
    long n = SHIM_SYS(SYS_getcwd, out, cap, 0);
    size_t have = n > 0 ? strnlen(out, cap) : 0, len = strlen(name);
    if (have == 0 || have + len + 2 > cap) {
      out[0] = '\0';
      return;
    }
    out[have] = '/';
    memcpy(out + have + 1, name, len + 1);
  }
}

static int scan_cb(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct scan* s = data;
  seen_adds = info->dlpi_adds;
  seen_subs = info->dlpi_subs;
  if (s->n == MAX_MODULES) return 1;
  struct mod* m = &s->found[s->n];
  range_of(info, &m->lo, &m->hi);
  if (m->hi == 0) return 0;
  path_of(info, s->names[s->n], sizeof s->names[0]);
  if (s->names[s->n][0] == '\0') return 0; /* no file: nothing to name its code with */
  m->base = info->dlpi_addr;
  shim_module_bounds_set(info);
  build_id_of(info, m->build_id);
  shim_module_bounds_clear();
  m->emitted = 0;
  ++s->n;
  return 0;
}

/* ---- records ---- */

static size_t put_str(char* o, const char* s) {
  size_t n = 0;
  o[n++] = '"';
  for (; *s != '\0'; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      o[n++] = (char)c;
    } else {
      memcpy(o + n, "\\u00", 4);
      n += 4;
      o[n++] = kHexDigits[c >> 4];
      o[n++] = kHexDigits[c & 15];
    }
  }
  o[n++] = '"';
  return n;
}

static size_t put_hex(char* o, uint64_t v) {
  size_t n = 0;
  char tmp[16];
  int k = 0;
  do {
    tmp[k++] = kHexDigits[v & 15];
    v >>= 4;
  } while (v != 0);
  memcpy(o, "\"0x", 3);
  n = 3;
  while (k > 0) o[n++] = tmp[--k];
  o[n++] = '"';
  return n;
}

/* A literal of known length at line + n (emit_record). */
#define LIT(s)                         \
  do {                                 \
    memcpy(line + n, s, sizeof s - 1); \
    n += sizeof s - 1;                 \
  } while (0)

static void emit_record(const struct mod* m) {
  char line[4096 + 512];
  size_t n = 0;
  const char* path = pool + m->path;
  if (strlen(path) > 600) return; /* 6 bytes per byte at worst: stays in `line` */
  LIT("{\"module\":{\"pid\":");
  char digits[16];
  int k = 0, v = rt_pid;
  do {
    digits[k++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (k > 0) line[n++] = digits[--k];
  LIT(",\"path\":");
  n += put_str(line + n, path);
  LIT(",\"build_id\":");
  n += put_str(line + n, m->build_id);
  LIT(",\"base\":");
  n += put_hex(line + n, m->base);
  LIT(",\"lo\":");
  n += put_hex(line + n, m->lo);
  LIT(",\"hi\":");
  n += put_hex(line + n, m->hi);
  LIT("}}\n");
  shim_emit_line(line, n);
}
#undef LIT

/* A coarse clock (the vDSO reads it without the TSC): the check below runs every few ms. */
static uint64_t coarse_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void shim_modules_check(int force) {
  uint64_t now = coarse_now();
  if (!force && scanned && now - atomic_load(&last_check) < 2000000) return;
  atomic_store(&last_check, now);
  lock_mods();
  unsigned long long old_subs = seen_subs, old_adds = seen_adds;
  scan_buf.n = 0;
  dl_iterate_phdr(scan_cb, &scan_buf);
  if (scanned && seen_adds == old_adds && seen_subs == old_subs) {
    unlock_mods();
    return;
  }
  if (scanned && seen_subs != old_subs) atomic_fetch_add(&generation, 1);
  /* Keep what was written for objects still there; record the others. */
  for (int i = 0; i < scan_buf.n; ++i) {
    struct mod* f = &scan_buf.found[i];
    for (int j = 0; j < nmods; ++j) {
      if (mods[j].lo == f->lo && mods[j].base == f->base && mods[j].emitted &&
          strcmp(pool + mods[j].path, scan_buf.names[i]) == 0) {
        f->emitted = 1;
        f->path = mods[j].path;
        break;
      }
    }
    if (!f->emitted) {
      size_t len = strlen(scan_buf.names[i]) + 1;
      if (pool_used + len > PATH_POOL) pool_used = 0; /* records already written keep theirs */
      memcpy(pool + pool_used, scan_buf.names[i], len);
      f->path = pool_used;
      pool_used += (uint32_t)len;
    }
  }
  memcpy(mods, scan_buf.found, sizeof mods[0] * (size_t)scan_buf.n);
  nmods = scan_buf.n;
  scanned = 1;
  for (int i = 0; i < nmods; ++i) {
    if (!mods[i].emitted) {
      emit_record(&mods[i]);
      mods[i].emitted = 1;
    }
  }
  unlock_mods();
}

uint32_t shim_modules_generation(void) {
  return atomic_load_explicit(&generation, memory_order_acquire);
}

/* ---- rules ---- */

struct find {
  uint64_t pc, lookup;
  struct uw_rule* rule;
  int found;   /* an object holds pc */
  uint64_t lo; /* its range, to check it has a record */
  uint64_t base;
};

/* x86-64 __restore_rt (glibc, musl): mov $15, %rax; syscall (rt_sigreturn). */
static const uint8_t kSigreturn[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

static int find_cb(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct find* f = data;
  const ElfW(Phdr)* eh = NULL;
  int holds = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    uint64_t a = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && f->pc >= a && f->pc - a < ph->p_memsz) holds = 1;
    if (ph->p_type == PT_GNU_EH_FRAME) eh = ph;
  }
  if (!holds) return 0;
  f->found = 1;
  uint64_t lo, hi;
  range_of(info, &lo, &hi);
  f->lo = lo;
  f->base = info->dlpi_addr;
  shim_module_bounds_set(info);
  uint8_t code[9];
  if (shim_module_read(f->pc, code, sizeof code) && memcmp(code, kSigreturn, 9) == 0) {
    f->rule->kind = UW_SIGNAL;
  } else {
    uint64_t fde = eh != NULL ? uw_find_fde(info->dlpi_addr + eh->p_vaddr, f->lookup) : 0;
    if (fde == 0) {
      memset(f->rule, 0, sizeof *f->rule);
      f->rule->kind = UW_NO_INFO;
    } else {
      uw_rule_from_fde(fde, f->lookup, f->rule);
    }
  }
  shim_module_bounds_clear();
  return 1;
}

int shim_find_rule(uint64_t pc, uint64_t lookup, struct uw_rule* rule) {
  struct find f = {pc, lookup, rule, 0, 0, 0};
  memset(rule, 0, sizeof *rule);
  rule->kind = UW_NO_INFO;
  dl_iterate_phdr(find_cb, &f);
  if (!f.found) return rule->kind;
  /* The object must have its record before an event names an address in it. */
  int known = 0;
  lock_mods();
  for (int i = 0; i < nmods && !known; ++i) known = mods[i].lo == f.lo && mods[i].base == f.base;
  unlock_mods();
  if (!known) shim_modules_check(1);
  return rule->kind;
}

void shim_self_range(uint64_t* lo, uint64_t* hi) {
  *lo = self_lo;
  *hi = self_hi;
}

static int self_cb(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  uint64_t pc = (uint64_t)(uintptr_t)&self_cb, lo, hi; /* any code of this shim */
  range_of(info, &lo, &hi);
  if (pc < lo || pc >= hi) return 0;
  self_lo = lo;
  self_hi = hi;
  return 1;
}

/* The table's lock is held across fork (as shim_init.c does for the tables of shim_core.c), so that
 * the child's copy is consistent; not by a thread already inside the shim (a fork from a signal
 * handler). */
static int fork_locked;
static void prepare(void) {
  fork_locked = !rt_t.busy;
  if (fork_locked) lock_mods();
}
static void after(void) {
  if (fork_locked) unlock_mods();
}

__attribute__((constructor)) static void modules_init(void) {
  dl_iterate_phdr(self_cb, NULL);
  pthread_atfork(prepare, after, after);
}
