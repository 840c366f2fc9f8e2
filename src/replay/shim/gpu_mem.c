/* The fake GPU's memory (gpu_mem.h): CPU mappings the replay handed out, the GPU ranges the
 * answered map calls give, and video memory for the ranges no CPU mapping shows. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "gpu_mem.h"
#include "vidmem.h"

#define MAX_CPU_MAPS 1024
#define MAX_LINEAR 1024
#define MAX_GPU_MAPS 2048

struct cpu_map {
  uint64_t cpu, len;
  int path;          /* -1: the program's own memory (an OS descriptor), not a device mapping */
  uint32_t h_memory; /* 0: not known */
  uint64_t mem_off;
};
struct linear {
  uint32_t h_memory;
  uint32_t used; /* an mmap took it */
  uint64_t offset, length, linear;
  int fd; /* the fd MAP_MEMORY named for the mapping; -1: not known */
};
struct gpu_map {
  uint64_t va, len;
  uint32_t h_memory;
  uint64_t mem_off;
};

static struct cpu_map cpus[MAX_CPU_MAPS];
static int ncpus;
static struct linear lins[MAX_LINEAR];
static int nlins;
static struct gpu_map gpus[MAX_GPU_MAPS];
static int ngpus;
static uint32_t lock;
static struct vidmem vram;
static int vram_ready; /* 1: vm_init done; -1: its table could not be made */

void gm_lock(void) {
  rt_lock(&lock);
}
void gm_unlock(void) {
  rt_unlock(&lock);
}

/* ---- what the answers tell ---- */

void rs_gpu_map_memory(uint32_t h, uint64_t offset, uint64_t length, uint64_t linear, int fd) {
  rt_lock(&lock);
  if (nlins == MAX_LINEAR) memmove(lins, lins + 1, sizeof lins[0] * (--nlins));
  lins[nlins++] = (struct linear){h, 0, offset, length, linear, fd};
  rt_unlock(&lock);
}

/* The MAP_MEMORY an mmap takes. The mapping's file offset is the linear address MAP_MEMORY
 * answered (the fixture's way), or 0 on a fd of its own (the driver's way: libcuda opens a fd per
 * mapping, names it in MAP_MEMORY's argument and mmaps it at 0): then the newest MAP_MEMORY of
 * this fd that no mmap took (or, for a second mmap of the fd, the newest of it); for an argument
 * without the fd, the newest of that length that no mmap took. */
static int linear_of(int fd, uint64_t off, uint64_t len) {
  int hit = -1;
  for (int i = nlins - 1; i >= 0 && hit < 0; --i) {
    if (lins[i].linear == off && off != 0) hit = i;
  }
  for (int i = nlins - 1; i >= 0 && hit < 0; --i) {
    if (!lins[i].used && lins[i].fd >= 0 && lins[i].fd == fd) hit = i;
  }
  for (int i = nlins - 1; i >= 0 && hit < 0; --i) {
    if (!lins[i].used && lins[i].fd < 0 && lins[i].length == len) hit = i;
  }
  for (int i = nlins - 1; i >= 0 && hit < 0; --i) { /* a second mmap of one fd */
    if (lins[i].fd >= 0 && lins[i].fd == fd) hit = i;
  }
  for (int i = nlins - 1; i >= 0 && hit < 0; --i) {
    if (lins[i].linear == off) hit = i;
  }
  return hit;
}

void rs_gpu_mmap(int path, int fd, uint64_t off, uint64_t cpu, uint64_t len) {
  rt_lock(&lock);
  struct cpu_map m = {cpu, len, path, 0, 0};
  int hit = linear_of(fd, off, len);
  if (hit >= 0) {
    m.h_memory = lins[hit].h_memory;
    m.mem_off = lins[hit].offset;
    lins[hit].used = 1;
  }
  if (ncpus < MAX_CPU_MAPS) cpus[ncpus++] = m;
  rt_unlock(&lock);
  if (nvtr_dev_kind_of_path(rs_path(path)) != NVTR_DEV_UVM) { /* UVM mmaps have no MAP_MEMORY */
    __atomic_fetch_add(&rs.st->gpu_maps, 1, __ATOMIC_RELAXED);
    if (hit >= 0) __atomic_fetch_add(&rs.st->gpu_maps_known, 1, __ATOMIC_RELAXED);
  }
}

int rs_gpu_munmap_query(uint64_t cpu, uint64_t len, int* path) {
  int hit = 0;
  rt_lock(&lock);
  for (int i = 0; i < ncpus && !hit; ++i) {
    if (cpus[i].path >= 0 && cpu < cpus[i].cpu + cpus[i].len && cpus[i].cpu < cpu + len) {
      hit = 1;
      *path = cpus[i].path;
    }
  }
  rt_unlock(&lock);
  return hit;
}

long rs_gpu_munmap(struct shim_call* c, uint64_t cpu, uint64_t len, int* err) {
  /* The GPU thread reads the mappings it knows (USERD, rings, pushbuffers) under `lock`: the
   * mapping goes away and out of the table while it is held, or that thread could read memory
   * just unmapped (it did: a SIGSEGV in about one run in two when the program unmapped its
   * channel's memory right after the work completed). */
  rt_lock(&lock);
  long r = shim_perform(c);
  *err = errno;
  for (int i = 0; r == 0 && i < ncpus; ++i) {
    if (cpus[i].path >= 0 && cpu <= cpus[i].cpu && cpus[i].cpu + cpus[i].len <= cpu + len) {
      cpus[i--] = cpus[--ncpus];
    }
  }
  rt_unlock(&lock);
  return r;
}

void rs_gpu_os_memory(uint32_t h, uint64_t cpu, uint64_t len) {
  if (h == 0 || cpu == 0 || len == 0) return;
  rt_lock(&lock);
  if (ncpus < MAX_CPU_MAPS) cpus[ncpus++] = (struct cpu_map){cpu, len, -1, h, 0};
  rt_unlock(&lock);
}

static void* vram_alloc(void* ctx, uint64_t n) {
  (void)ctx;
  long p =
      rt_sys6(SYS_mmap, 0, (long)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return RT_FAILED(p) ? NULL : (void*)p;
}
static void vram_release(void* ctx, void* p, uint64_t n) {
  (void)ctx;
  RT_SYS(SYS_munmap, p, n, 0);
}

/* Video memory, made at the first GPU range (its chunk table: 2 MiB for the 4 GiB cap). */
static struct vidmem* vram_get(void) {
  if (vram_ready == 0) {
    static const struct vm_ops ops = {NULL, vram_alloc, vram_release};
    void* table = vram_alloc(NULL, vm_table_bytes(GM_VIDMEM_CAP));
    if (table != NULL) vm_init(&vram, &ops, GM_VIDMEM_CAP, table);
    vram_ready = table != NULL ? 1 : -1;
  }
  return vram_ready == 1 ? &vram : NULL;
}

static void add_gpu(uint32_t h, uint64_t offset, uint64_t length, uint64_t va) {
  if (length == 0) return;
  rt_lock(&lock);
  if (ngpus < MAX_GPU_MAPS) gpus[ngpus++] = (struct gpu_map){va, length, h, offset};
  /* Backed whether or not a CPU mapping shows the object (one may come later): a CPU mapping
   * is looked at first, so the backing is used only where none shows the bytes. */
  struct vidmem* v = vram_get();
  if (v != NULL) vm_add(v, va, length);
  rt_unlock(&lock);
}

void rs_gpu_map_dma(uint32_t h, uint64_t offset, uint64_t length, uint64_t va) {
  add_gpu(h, offset, length, va);
}

void rs_gpu_map_external(uint32_t h, uint64_t offset, uint64_t length, uint64_t va) {
  add_gpu(h, offset, length, va);
}

void gm_free(uint32_t h) {
  for (int i = 0; i < ncpus; ++i) { /* the program's own memory: RM no longer describes it */
    if (cpus[i].path < 0 && cpus[i].h_memory == h) cpus[i--] = cpus[--ncpus];
  }
  for (int i = 0; i < ngpus; ++i) {
    if (gpus[i].h_memory != h || h == 0) continue;
    if (vram_ready == 1) vm_remove(&vram, gpus[i].va, gpus[i].len);
    gpus[i--] = gpus[--ngpus];
  }
}

void gm_publish(struct rp_vidmem_stats* out) {
  if (vram_ready != 1) return;
  struct rp_vidmem_stats s = {vram.cap_bytes,     vm_backed_bytes(&vram), vram.n_ranges,
                              vram.dropped_bytes, vram.dropped_writes,    vram.ranges_refused};
  *out = s;
}

void gm_atfork_child(void) {
  lock = 0;
}

/* ---- translation ---- */

uint64_t gm_object_cpu(uint32_t h, uint64_t x, uint64_t n) {
  for (int i = 0; i < ncpus; ++i) {
    const struct cpu_map* m = &cpus[i];
    if (m->h_memory != h || h == 0 || x < m->mem_off) continue;
    uint64_t in = x - m->mem_off;
    if (in < m->len && n <= m->len - in) return m->cpu + in;
  }
  return 0;
}

uint64_t gm_cpu(uint64_t va, uint64_t n) {
  for (int i = ngpus - 1; i >= 0; --i) {
    const struct gpu_map* g = &gpus[i];
    if (va >= g->va && va - g->va < g->len) {
      uint64_t c = gm_object_cpu(g->h_memory, g->mem_off + (va - g->va), n);
      if (c != 0) return c;
    }
  }
  for (int i = 0; i < ncpus; ++i) { /* the same address on both sides (UVM) */
    const struct cpu_map* m = &cpus[i];
    if (va >= m->cpu && va - m->cpu < m->len && n <= m->len - (va - m->cpu)) return va;
  }
  return 0;
}

uint64_t gm_read(uint64_t va, void* dst, uint64_t n) {
  uint64_t p = gm_cpu(va, n);
  if (p != 0) {
    memcpy(dst, (const void*)(uintptr_t)p, n);
    return n;
  }
  return vram_ready == 1 ? vm_read(&vram, va, dst, n) : 0;
}

uint64_t gm_write(uint64_t va, const void* src, uint64_t n) {
  uint64_t p = gm_cpu(va, n);
  if (p != 0) {
    memcpy((void*)(uintptr_t)p, src, n);
    return n;
  }
  return vram_ready == 1 ? vm_write(&vram, va, src, n) : 0;
}

void* gm_span(uint64_t va, uint64_t n) {
  uint64_t p = gm_cpu(va, n);
  if (p != 0) return (void*)(uintptr_t)p;
  return vram_ready == 1 ? vm_span(&vram, va, n, 1) : NULL;
}

/* ---- launch.c's view ---- */

static uint64_t fg_read(void* ctx, uint64_t va, void* dst, uint64_t n) {
  (void)ctx;
  return gm_read(va, dst, n);
}
static uint64_t fg_write(void* ctx, uint64_t va, const void* src, uint64_t n) {
  (void)ctx;
  return gm_write(va, src, n);
}
static uint64_t fg_now(void* ctx) {
  (void)ctx;
  return rt_now_ns();
}

const struct fg_mem* gm_fg_mem(void) {
  static const struct fg_mem m = {NULL, fg_read, fg_write, fg_now};
  return &m;
}
