/* The function recorder's set-up: mapping the plan and the spool, and patching the library
 * (funcrec.h). Runs once per process image, outside the hooks. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "funcrec_int.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct fr_global fr_g = {.spool_fd = -1};

FR_HIDDEN void fr_register_handlers(void);

static const uint64_t kPage = 4096;
static const int64_t kReach = (int64_t)1 << 31;

/* ---- vector state around libc calls ---- */

static uint32_t xsave_size;              /* 0: no XSAVE, use FXSAVE */
static const uint64_t kXsaveMask = 0xff; /* x87, SSE, AVX, MPX, AVX-512: not AMX tiles */
#define FR_FPU_AREA 8192

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

void fr_fpu_probe(void) {
  uint32_t r[4];
  cpuid(0, 0, r);
  if (r[0] < 0xd) return;
  cpuid(1, 0, r);
  if ((r[2] & (1u << 27)) == 0) return; /* OSXSAVE: the OS enabled XSAVE */
  /* The standard-format size of the components in the mask that XCR0 enables. */
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  uint64_t xcr0 = ((uint64_t)hi << 32 | lo) & kXsaveMask;
  uint32_t size = 576; /* legacy area + header */
  for (uint32_t i = 2; i < 8; ++i) {
    if ((xcr0 & (1ull << i)) == 0) continue;
    cpuid(0xd, i, r);
    if (r[1] + r[0] > size) size = r[1] + r[0];
  }
  if (size + 64 <= FR_FPU_AREA) xsave_size = size;
}

void fr_fpu_safe_call(void (*fn)(void*), void* arg) {
  uint8_t raw[FR_FPU_AREA + 64];
  uint8_t* area = (uint8_t*)(((uint64_t)raw + 63) & ~(uint64_t)63);
  if (xsave_size != 0) {
    for (uint32_t i = 512; i < 576; ++i) area[i] = 0; /* the XSAVE header must start zeroed */
    __asm__ volatile("xsave64 (%0)" ::"r"(area), "a"((uint32_t)kXsaveMask), "d"(0) : "memory");
    fn(arg);
    __asm__ volatile("xrstor64 (%0)" ::"r"(area), "a"((uint32_t)kXsaveMask), "d"(0) : "memory");
  } else {
    __asm__ volatile("fxsave64 (%0)" ::"r"(area) : "memory");
    fn(arg);
    __asm__ volatile("fxrstor64 (%0)" ::"r"(area) : "memory");
  }
}

/* ---- files ---- */

static void say_into(char* why, size_t n, const char* a, const char* b) {
  size_t k = 0;
  const char* parts[2] = {a, b};
  for (int i = 0; i < 2 && why != NULL; ++i) {
    for (const char* s = parts[i]; s != NULL && *s != '\0' && k + 1 < n; ++s) why[k++] = *s;
  }
  if (why != NULL && n > 0) why[k] = '\0';
}

/* Maps a whole file; NULL when it cannot be. */
static void* map_file(const char* path, int writable, uint64_t* len, int* fd_out) {
  long fd = RT_SYS(SYS_open, path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
  if (fd < 0) return NULL;
  struct stat st;
  if (RT_SYS(SYS_fstat, fd, &st, 0) != 0 || st.st_size <= 0) {
    RT_SYS(SYS_close, fd, 0, 0);
    return NULL;
  }
  uint64_t size = (uint64_t)st.st_size;
  if (writable) size = FR_SPOOL_HEADER_SIZE; /* the header only; chunks are mapped one by one */
  long p = rt_sys6(SYS_mmap, 0, (long)size, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                   MAP_SHARED, fd, 0);
  if (fd_out != NULL) {
    *fd_out = (int)fd;
  } else {
    RT_SYS(SYS_close, fd, 0, 0);
  }
  if (RT_FAILED(p)) return NULL;
  *len = (uint64_t)st.st_size;
  return (void*)p;
}

static const char* check_plan(const struct fr_plan_header* h, uint64_t len) {
  if (len < sizeof *h || h->magic != FR_PLAN_MAGIC) return "not a function plan";
  if (h->version != FR_ABI_VERSION) return "a function plan of another version";
  if (h->header_size != sizeof *h || h->site_size != sizeof(struct fr_plan_site))
    return "a function plan with other record sizes";
  if (h->sites > (len - sizeof *h) / sizeof(struct fr_plan_site)) return "a cut function plan";
  if (h->build_id_len > sizeof h->build_id) return "a function plan with a bad build id";
  const struct fr_plan_site* s = (const struct fr_plan_site*)(h + 1);
  for (uint32_t i = 0; i < h->sites; ++i) {
    if (s[i].displaced < 5 || s[i].displaced > FR_MAX_DISPLACED || s[i].fixups > FR_MAX_FIXUPS ||
        s[i].start < h->text_lo || s[i].start + s[i].displaced > h->text_hi)
      return "a function plan with a bad site";
    for (uint32_t j = 0; j < s[i].fixups; ++j) {
      if (s[i].fix_offset[j] + 4u > s[i].fix_insn_end[j] || s[i].fix_insn_end[j] > s[i].displaced)
        return "a function plan with a bad fixup";
    }
  }
  return NULL;
}

int funcrec_init(const char* plan_path, const char* spool_path, char* why, size_t why_len) {
  if (fr_g.plan != NULL) return 0;
  /* The spool first: what goes wrong with the plan is written into it (funcrec_load.c). */
  if (fr_g.spool == NULL) {
    uint64_t len = 0;
    int fd = -1;
    struct fr_spool_header* sp = map_file(spool_path, 1, &len, &fd);
    if (sp == NULL || len < FR_SPOOL_HEADER_SIZE || sp->magic != FR_SPOOL_MAGIC ||
        sp->version != FR_ABI_VERSION || sp->chunk_size < kPage || sp->chunk_size % kPage != 0 ||
        sp->capacity > (len - FR_SPOOL_HEADER_SIZE) / sp->chunk_size) {
      say_into(why, why_len, "cannot use the function spool ", spool_path);
      return -1;
    }
    fr_g.spool = sp;
    fr_g.spool_fd = fd;
  }
  uint64_t len = 0;
  const struct fr_plan_header* h = map_file(plan_path, 0, &len, NULL);
  if (h == NULL) {
    say_into(why, why_len, "cannot read the function plan ", plan_path);
    return -1;
  }
  const char* bad = check_plan(h, len);
  if (bad != NULL) {
    say_into(why, why_len, bad, "");
    return -1;
  }
  fr_fpu_probe();
  fr_g.plan = h;
  fr_g.sites = (const struct fr_plan_site*)(h + 1);
  fr_g.nsites = h->sites;
  fr_register_handlers();
  return 0;
}

int funcrec_installed(void) {
  return fr_g.installed;
}

/* ---- patching ---- */

/* The library's NT_GNU_BUILD_ID note, from its PT_NOTE segments in memory. */
static int same_build_id(uint64_t base, const Elf64_Phdr* ph, int phnum) {
  for (int i = 0; i < phnum; ++i) {
    if (ph[i].p_type != PT_NOTE) continue;
    const uint8_t* p = (const uint8_t*)(base + ph[i].p_vaddr);
    const uint8_t* end = p + ph[i].p_memsz;
    while (end - p >= 12) {
      const uint32_t* n = (const uint32_t*)p;
      uint64_t name = (n[0] + 3u) & ~3u, desc = (n[1] + 3u) & ~3u;
      if (name + desc > (uint64_t)(end - p) - 12) break;
      if (n[2] == NT_GNU_BUILD_ID && n[0] == 4 && p[12] == 'G' && p[13] == 'N' && p[14] == 'U') {
        if (n[1] != fr_g.plan->build_id_len) return 0;
        for (uint32_t k = 0; k < n[1]; ++k)
          if (p[12 + name + k] != fr_g.plan->build_id[k]) return 0;
        return 1;
      }
      p += 12 + name + desc;
    }
  }
  return 0;
}

static int fits32(int64_t v) {
  return v >= -kReach && v < kReach;
}

/* Trampolines within reach of every patched function: below the library, else above it. */
static uint8_t* map_region(uint64_t lo, uint64_t hi, uint64_t len) {
  const uint64_t step = 16ull << 20;
  for (int dir = 0; dir < 2; ++dir) {
    for (uint64_t k = 1; k <= 64; ++k) {
      uint64_t hint = dir == 0 ? (lo & ~(kPage - 1)) - len - k * step
                               : ((hi + kPage - 1) & ~(kPage - 1)) + k * step;
      if (dir == 0 && (lo < len + k * step + kPage)) break;
      long p = rt_sys6(SYS_mmap, (long)hint, (long)len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (RT_FAILED(p)) continue;
      uint64_t a = (uint64_t)p;
      if (fits32((int64_t)(a + len - lo)) && fits32((int64_t)(hi - a))) return (uint8_t*)p;
      RT_SYS(SYS_munmap, p, len, 0); /* an old kernel took the hint as a hint only */
    }
  }
  return NULL;
}

/* One site's trampoline: push $number; jmp *common(%rip); at +16 the moved instructions with
 * their fields adjusted; jmp back. 0 when a field does not reach from there. */
static int build_stub(uint64_t base, uint32_t i) {
  const struct fr_plan_site* s = &fr_g.sites[i];
  uint8_t* stub = fr_g.region + FR_STUB_SIZE * (i + 1);
  const uint64_t fn = base + s->start;
  const uint8_t* orig = (const uint8_t*)fn;
  for (uint32_t k = 0; k < s->displaced; ++k)
    if (orig[k] != s->bytes[k]) return 0; /* not the code the plan was made from */
  uint8_t* moved = stub + 16;
  for (uint32_t k = 0; k < s->displaced; ++k) moved[k] = orig[k];
  for (uint32_t j = 0; j < s->fixups; ++j) {
    int32_t old;
    __builtin_memcpy(&old, orig + s->fix_offset[j], 4);
    uint64_t target = fn + s->fix_insn_end[j] + (uint64_t)(int64_t)old;
    int64_t disp = (int64_t)(target - ((uint64_t)moved + s->fix_insn_end[j]));
    if (!fits32(disp)) return 0;
    int32_t d = (int32_t)disp;
    __builtin_memcpy(moved + s->fix_offset[j], &d, 4);
  }
  uint8_t* back = moved + s->displaced;
  int64_t rel = (int64_t)(fn + s->displaced - ((uint64_t)back + 5));
  int64_t to_stub = (int64_t)((uint64_t)stub - (fn + 5));
  int64_t to_common = (int64_t)((uint64_t)fr_g.region - ((uint64_t)stub + 11));
  if (!fits32(rel) || !fits32(to_stub) || !fits32(to_common)) return 0;
  int32_t r32 = (int32_t)rel, c32 = (int32_t)to_common;
  back[0] = 0xe9;
  __builtin_memcpy(back + 1, &r32, 4);
  stub[0] = 0x68; /* push imm32 */
  __builtin_memcpy(stub + 1, &i, 4);
  stub[5] = 0xff; /* jmp *disp32(%rip) */
  stub[6] = 0x25;
  __builtin_memcpy(stub + 7, &c32, 4);
  return 1;
}

/* jmp rel32 to the stub over the function's first bytes; the rest of the moved bytes int3. */
static void patch_site(uint64_t base, uint32_t i) {
  const struct fr_plan_site* s = &fr_g.sites[i];
  uint8_t* fn = (uint8_t*)(base + s->start);
  int32_t rel =
      (int32_t)((int64_t)((uint64_t)(fr_g.region + FR_STUB_SIZE * (i + 1)) - ((uint64_t)fn + 5)));
  fn[0] = 0xcc;
  __builtin_memcpy(fn + 1, &rel, 4);
  for (uint32_t k = 5; k < s->displaced; ++k) fn[k] = 0xcc;
  __atomic_store_n(fn, (uint8_t)0xe9, __ATOMIC_RELEASE);
}

/* A table of the spool for this install: -1 when all are taken (then nothing is patched). */
static int64_t take_table(void) {
  uint64_t idx = __atomic_fetch_add(&fr_g.spool->next_table, 1, __ATOMIC_RELAXED);
  return idx < FR_MAX_TABLES ? (int64_t)idx : -1;
}

static void register_table(uint32_t idx, uint64_t base, const char* path, uint64_t t0,
                           uint32_t patched, uint32_t skipped) {
  struct fr_spool_table* t = &fr_g.spool->tables[idx];
  t->pid = (int32_t)RT_SYS(SYS_getpid, 0, 0, 0);
  t->base = base;
  t->t_ns = t0;
  t->install_ns = rt_now_ns() - t0;
  t->patched = patched;
  t->skipped = skipped;
  size_t k = 0;
  for (; path != NULL && path[k] != '\0' && k + 1 < FR_PATH_MAX; ++k) t->path[k] = path[k];
  t->path[k] = '\0';
  __atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
  fr_g.table = (uint32_t)idx;
}

int funcrec_matches(uint64_t base, const void* phdr, int phnum) {
  return fr_g.plan != NULL && same_build_id(base, (const Elf64_Phdr*)phdr, phnum);
}

int funcrec_install(uint64_t base, const void* phdr, int phnum, const char* path, char* why,
                    size_t why_len) {
  if (fr_g.plan == NULL) {
    say_into(why, why_len, "the function recorder was not initialised", "");
    return -1;
  }
  if (fr_g.installed) return 0;
  if (!same_build_id(base, (const Elf64_Phdr*)phdr, phnum)) {
    say_into(why, why_len, path, ": not the build the function plan was made for");
    return -1;
  }
  const int64_t table = take_table();
  if (table < 0) {
    say_into(why, why_len, "the function spool has no room for another process's table", "");
    return -1;
  }
  const uint64_t t0 = rt_now_ns();
  const uint64_t lo = base + fr_g.plan->text_lo, hi = base + fr_g.plan->text_hi;
  fr_g.region_len = ((uint64_t)FR_STUB_SIZE * (fr_g.nsites + 1) + kPage - 1) & ~(kPage - 1);
  fr_g.region = map_region(lo, hi, fr_g.region_len);
  if (fr_g.region == NULL) {
    say_into(why, why_len, "no memory for trampolines within 2 GiB of ", path);
    return -1;
  }
  uint64_t common = (uint64_t)fr_entry_common;
  __builtin_memcpy(fr_g.region, &common, 8);
  uint8_t* ok = fr_map_anon(fr_g.nsites + 1);
  if (ok == NULL) return -1;
  uint32_t patched = 0;
  for (uint32_t i = 0; i < fr_g.nsites; ++i) patched += ok[i] = (uint8_t)build_stub(base, i);
  RT_SYS(SYS_mprotect, fr_g.region, fr_g.region_len, PROT_READ | PROT_EXEC);
  const uint64_t plo = lo & ~(kPage - 1), phi = (hi + kPage - 1) & ~(kPage - 1);
  if (RT_SYS(SYS_mprotect, plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    say_into(why, why_len, "cannot make the text writable: ", path);
    return -1;
  }
  fr_g.installed = 1; /* before the first patch: a patched function may run at once */
  register_table((uint32_t)table, base, path, t0, patched, fr_g.nsites - patched);
  for (uint32_t i = 0; i < fr_g.nsites; ++i)
    if (ok[i]) patch_site(base, i);
  RT_SYS(SYS_mprotect, plo, phi - plo, PROT_READ | PROT_EXEC);
  RT_SYS(SYS_munmap, ok, fr_g.nsites + 1, 0);
  return (int)patched;
}
