/* The replay's minimal GPU (docs/replay.md, "Fake GPU"): enough for context creation.
 *
 * The replay hands out every device mapping, so it knows which memory object each CPU mapping
 * shows (NV_ESC_RM_MAP_MEMORY's pLinearAddress is the offset of the mmap that follows) and, from
 * the answered NV_ESC_RM_MAP_MEMORY_DMA and UVM_MAP_EXTERNAL_ALLOCATION calls, which memory
 * object each GPU virtual address range shows; where a GPU address lies inside a CPU mapping the
 * replay made (UVM ranges: the same address on both sides), it is that address.
 *
 * For each GPFIFO channel (its allocation parameters give the ring and USERD), a thread of the
 * shim follows GPPut in USERD, reads the ring's entries and the pushbuffer segments they point to
 * as the program wrote them, and carries out what needs no engine: host semaphore releases and
 * acquires, copy-engine semaphore releases, copies and fills between memory it can see, and
 * compute-class report semaphores. A compute launch (SEND_PCAS) is real work: the channel stops
 * there, GPGet stays, and the semaphore release that would follow is recorded as what the
 * program waits for. Method layouts: generated/gpu_methods.h (from NVIDIA's class headers). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "../generated/gpu_methods.h"
#include "replay_shim.h"

#define FIELD(v, name) (((v) >> name##_LO) & ((1ull << (name##_HI - name##_LO + 1)) - 1))

#define MAX_CPU_MAPS 1024
#define MAX_LINEAR 1024
#define MAX_GPU_MAPS 2048
#define MAX_CHANNELS 64

struct cpu_map {
  uint64_t cpu, len;
  int path;
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

struct channel {
  uint32_t handle, cls;
  uint64_t gpfifo_va;
  uint32_t entries;
  uint32_t userd_h;
  uint64_t userd_off;
  uint32_t gp_get;
  uint32_t pb_pos; /* dword to resume the current entry at (after an unmet acquire) */
  int active, blocked;
  uint32_t subch[8]; /* class bound to each subchannel */
  /* host semaphore */
  uint64_t sem_addr, sem_payload;
  /* copy engine */
  uint64_t ce_sem, ce_in, ce_out;
  uint32_t ce_payload, ce_line, ce_count, ce_pitch_in, ce_pitch_out, ce_const_a, ce_remap;
  /* compute report semaphore */
  uint64_t rs_addr;
  uint32_t rs_payload;
  /* the acquire that is not met (RP_CH_ACQUIRE) */
  uint32_t acq_op;
  uint64_t acq_want, acq_value;
  uint32_t published_pos; /* pb_pos when the channel's state was last published */
};

static struct cpu_map cpus[MAX_CPU_MAPS];
static int ncpus;
static struct linear lins[MAX_LINEAR];
static int nlins;
static struct gpu_map gpus[MAX_GPU_MAPS];
static int ngpus;
static struct channel chans[MAX_CHANNELS];
static int nchans;
static uint32_t lock;
static int thread_started;

/* ---- what the answers tell ---- */

void rs_gpu_map_memory(uint32_t h, uint64_t offset, uint64_t length, uint64_t linear, int fd) {
  rt_lock(&lock);
  if (nlins == MAX_LINEAR) memmove(lins, lins + 1, sizeof lins[0] * (--nlins));
  lins[nlins++] = (struct linear){h, 0, offset, length, linear, fd};
  rt_unlock(&lock);
}

void rs_gpu_mmap(int path, int fd, uint64_t off, uint64_t cpu, uint64_t len) {
  rt_lock(&lock);
  struct cpu_map m = {cpu, len, path, 0, 0};
  /* The mapping's file offset is the linear address MAP_MEMORY answered (the fixture's way), or
   * 0 on a fd of its own (the driver's way: libcuda opens a fd per mapping, names it in
   * MAP_MEMORY's argument and mmaps it at 0): then the newest MAP_MEMORY of this fd that no
   * mmap took (or, for a second mmap of the fd, the newest of it); for an argument without the
   * fd, the newest of that length that no mmap took. */
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
    if (cpu < cpus[i].cpu + cpus[i].len && cpus[i].cpu < cpu + len) {
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
    if (cpu <= cpus[i].cpu && cpus[i].cpu + cpus[i].len <= cpu + len) {
      cpus[i--] = cpus[--ncpus];
    }
  }
  rt_unlock(&lock);
  return r;
}

static void add_gpu(uint32_t h, uint64_t offset, uint64_t length, uint64_t va) {
  if (length == 0) return;
  rt_lock(&lock);
  if (ngpus < MAX_GPU_MAPS) gpus[ngpus++] = (struct gpu_map){va, length, h, offset};
  rt_unlock(&lock);
}

void rs_gpu_map_dma(uint32_t h, uint64_t offset, uint64_t length, uint64_t va) {
  add_gpu(h, offset, length, va);
}

void rs_gpu_map_external(uint32_t h, uint64_t offset, uint64_t length, uint64_t va) {
  add_gpu(h, offset, length, va);
}

void rs_gpu_free(uint32_t handle) {
  rt_lock(&lock);
  for (int i = 0; i < nchans; ++i) {
    if (chans[i].handle == handle) chans[i].active = 0;
  }
  rt_unlock(&lock);
}

static uint64_t le64(const uint8_t* p, uint64_t len, int32_t off) {
  uint64_t v = 0;
  if (off >= 0 && (uint64_t)off + 8 <= len) memcpy(&v, p + off, 8);
  return v;
}
static uint32_t le32(const uint8_t* p, uint64_t len, int32_t off) {
  uint32_t v = 0;
  if (off >= 0 && (uint64_t)off + 4 <= len) memcpy(&v, p + off, 4);
  return v;
}

void rs_gpu_channel(uint32_t h, uint32_t cls, const uint8_t* params, uint64_t len) {
  const struct rp_gpu_layout* g = &rs.t->gpu;
  rt_lock(&lock);
  if (nchans < MAX_CHANNELS) {
    struct channel* c = &chans[nchans++];
    memset(c, 0, sizeof *c);
    c->handle = h;
    c->cls = cls;
    c->gpfifo_va = le64(params, len, g->chan_gpfifo_offset);
    c->entries = le32(params, len, g->chan_gpfifo_entries);
    c->userd_h = rs_handle(le32(params, len, g->chan_userd_memory));
    c->userd_off = le64(params, len, g->chan_userd_offset);
    c->active = c->entries != 0;
  }
  rt_unlock(&lock);
}

void rs_gpu_atfork_child(void) {
  /* The parent carries on with its channels; this process's thread is gone. */
  thread_started = 0;
  for (int i = 0; i < nchans; ++i) chans[i].active = 0;
  lock = 0;
}

/* ---- translation ---- */

/* The CPU address of memory object h at offset x, n bytes; 0 when not mapped. */
static uint64_t mem_cpu(uint32_t h, uint64_t x, uint64_t n) {
  for (int i = 0; i < ncpus; ++i) {
    const struct cpu_map* m = &cpus[i];
    if (m->h_memory != h || h == 0 || x < m->mem_off) continue;
    uint64_t in = x - m->mem_off;
    if (in < m->len && n <= m->len - in) return m->cpu + in;
  }
  return 0;
}

static uint64_t va_cpu(uint64_t va, uint64_t n) {
  for (int i = ngpus - 1; i >= 0; --i) {
    const struct gpu_map* g = &gpus[i];
    if (va >= g->va && va - g->va < g->len) {
      uint64_t c = mem_cpu(g->h_memory, g->mem_off + (va - g->va), n);
      if (c != 0) return c;
    }
  }
  for (int i = 0; i < ncpus; ++i) { /* the same address on both sides (UVM) */
    const struct cpu_map* m = &cpus[i];
    if (va >= m->cpu && va - m->cpu < m->len && n <= m->len - (va - m->cpu)) return va;
  }
  return 0;
}

static volatile uint32_t* userd_of(const struct channel* c) {
  uint64_t p = mem_cpu(c->userd_h, c->userd_off, 0x100);
  if (p == 0) p = mem_cpu(c->handle, 0, 0x100); /* USERD mapped through the channel itself */
  return (volatile uint32_t*)(uintptr_t)p;
}

/* ---- engines ---- */

static void write_sem(uint64_t va, uint64_t payload, int wide, int timestamp) {
  uint64_t p = va_cpu(va, timestamp ? 16 : wide ? 8 : 4);
  if (p == 0) return;
  if (timestamp) {
    __atomic_store_n((volatile uint64_t*)(uintptr_t)(p + 8), rt_now_ns(), __ATOMIC_RELEASE);
  }
  if (wide || timestamp) {
    __atomic_store_n((volatile uint64_t*)(uintptr_t)p, payload, __ATOMIC_RELEASE);
  } else {
    __atomic_store_n((volatile uint32_t*)(uintptr_t)p, (uint32_t)payload, __ATOMIC_RELEASE);
  }
  __atomic_fetch_add(&rs.st->gpu_releases, 1, __ATOMIC_RELAXED);
}

/* 0: done; 1: an acquire not met yet (retry). */
static int host_method(struct channel* c, uint32_t m, uint32_t v, int sub) {
  switch (m) {
    case RPG_NVC86F_SET_OBJECT:
      c->subch[sub & 7] = v & 0xffff;
      return 0;
    case RPG_NVC86F_SEM_ADDR_LO:
      c->sem_addr = (c->sem_addr & ~0xffffffffull) | (v & ~3u);
      return 0;
    case RPG_NVC86F_SEM_ADDR_HI:
      c->sem_addr =
          (c->sem_addr & 0xffffffffull) | ((uint64_t)FIELD(v, RPG_NVC86F_SEM_ADDR_HI_OFFSET) << 32);
      return 0;
    case RPG_NVC86F_SEM_PAYLOAD_LO:
      c->sem_payload = (c->sem_payload & ~0xffffffffull) | v;
      return 0;
    case RPG_NVC86F_SEM_PAYLOAD_HI:
      c->sem_payload = (c->sem_payload & 0xffffffffull) | ((uint64_t)v << 32);
      return 0;
    case RPG_NVC86F_SEM_EXECUTE: {
      uint32_t op = (uint32_t)FIELD(v, RPG_NVC86F_SEM_EXECUTE_OPERATION);
      int wide = FIELD(v, RPG_NVC86F_SEM_EXECUTE_PAYLOAD_SIZE) ==
                 RPG_NVC56F_SEM_EXECUTE_PAYLOAD_SIZE_64BIT;
      int ts = FIELD(v, RPG_NVC86F_SEM_EXECUTE_RELEASE_TIMESTAMP) ==
               RPG_NVC86F_SEM_EXECUTE_RELEASE_TIMESTAMP_EN;
      if (op == RPG_NVC86F_SEM_EXECUTE_OPERATION_RELEASE) {
        write_sem(c->sem_addr, c->sem_payload, wide, ts);
        return 0;
      }
      uint64_t p = va_cpu(c->sem_addr, wide ? 8 : 4);
      if (p == 0) return 0; /* memory the replay cannot see: taken as met */
      uint64_t cur = wide ? __atomic_load_n((volatile uint64_t*)(uintptr_t)p, __ATOMIC_ACQUIRE)
                          : __atomic_load_n((volatile uint32_t*)(uintptr_t)p, __ATOMIC_ACQUIRE);
      uint64_t want = wide ? c->sem_payload : (uint32_t)c->sem_payload;
      int met = 1;
      if (op == RPG_NVC86F_SEM_EXECUTE_OPERATION_ACQUIRE) {
        met = cur == want;
      } else if (op == RPG_NVC56F_SEM_EXECUTE_OPERATION_ACQ_STRICT_GEQ) {
        met = wide ? (int64_t)(cur - want) >= 0 : (int32_t)((uint32_t)cur - (uint32_t)want) >= 0;
      } else if (op == RPG_NVC86F_SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ) {
        met = wide ? (int64_t)(cur - want) >= 0 : (int32_t)((uint32_t)cur - (uint32_t)want) >= 0;
      } else if (op == RPG_NVC56F_SEM_EXECUTE_OPERATION_ACQ_AND) {
        met = (cur & want) != 0;
      } else if (op == RPG_NVC56F_SEM_EXECUTE_OPERATION_ACQ_NOR) {
        met = (cur | want) != ~0ull;
      } else if (op == RPG_NVC56F_SEM_EXECUTE_OPERATION_REDUCTION) {
        uint32_t red = (uint32_t)FIELD(v, RPG_NVC56F_SEM_EXECUTE_REDUCTION);
        uint64_t nv = red == RPG_NVC56F_SEM_EXECUTE_REDUCTION_IADD  ? cur + want
                      : red == RPG_NVC56F_SEM_EXECUTE_REDUCTION_INC ? (cur >= want ? 0 : cur + 1)
                                                                    : want;
        write_sem(c->sem_addr, nv, wide, 0);
      }
      if (!met) {
        c->acq_op = op;
        c->acq_want = want;
        c->acq_value = cur;
      }
      return met ? 0 : 1;
    }
    default:
      return 0; /* WFI, MEM_OP, non-stall interrupts, …: nothing to do without an engine */
  }
}

static void ce_launch(struct channel* c, uint32_t v) {
  if (FIELD(v, RPG_NVC8B5_LAUNCH_DMA_DATA_TRANSFER_TYPE) != 0 &&
      FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SRC_TYPE) == 0 &&
      FIELD(v, RPG_NVC8B5_LAUNCH_DMA_DST_TYPE) == 0) {
    uint32_t lines = FIELD(v, RPG_NVC8B5_LAUNCH_DMA_MULTI_LINE_ENABLE) ? c->ce_count : 1;
    int fill = FIELD(v, RPG_NVC8B5_LAUNCH_DMA_REMAP_ENABLE) != 0;
    uint32_t comp =
        (uint32_t)FIELD(c->ce_remap, RPG_NVC8B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE) + 1;
    uint32_t ncomp =
        (uint32_t)FIELD(c->ce_remap, RPG_NVC8B5_SET_REMAP_COMPONENTS_NUM_DST_COMPONENTS) + 1;
    uint64_t bytes = fill ? (uint64_t)c->ce_line * comp * ncomp : c->ce_line;
    for (uint32_t l = 0; l < lines && lines < (1u << 20); ++l) {
      uint64_t dst = va_cpu(c->ce_out + (uint64_t)l * c->ce_pitch_out, bytes);
      if (dst == 0) continue;
      if (fill &&
          FIELD(c->ce_remap, RPG_NVC8B5_SET_REMAP_COMPONENTS_DST_X) ==
              RPG_NVC8B5_SET_REMAP_COMPONENTS_DST_X_CONST_A &&
          comp == 4) {
        for (uint64_t i = 0; i + 4 <= bytes; i += 4)
          memcpy((void*)(uintptr_t)(dst + i), &c->ce_const_a, 4);
      } else if (fill && comp == 1) {
        memset((void*)(uintptr_t)dst, (int)(c->ce_const_a & 0xff), bytes);
      } else if (!fill) {
        uint64_t src = va_cpu(c->ce_in + (uint64_t)l * c->ce_pitch_in, bytes);
        if (src != 0) memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
      }
    }
  }
  uint32_t type = (uint32_t)FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE);
  if (type == 0) return;
  uint64_t payload = c->ce_payload;
  if (FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE)) {
    uint64_t p = va_cpu(c->ce_sem, 4);
    uint32_t cur = p ? __atomic_load_n((volatile uint32_t*)(uintptr_t)p, __ATOMIC_ACQUIRE) : 0;
    uint32_t red = (uint32_t)FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION);
    if (red == RPG_NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_IADD) payload = cur + c->ce_payload;
    if (red == RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_INC)
      payload = cur >= c->ce_payload ? 0 : cur + 1;
  }
  write_sem(c->ce_sem, payload, 0,
            type == RPG_NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE);
}

static void ce_method(struct channel* c, uint32_t m, uint32_t v) {
  switch (m) {
    case RPG_NVC8B5_SET_SEMAPHORE_A:
      c->ce_sem = (c->ce_sem & 0xffffffffull) | ((uint64_t)(v & 0x1ffffff) << 32);
      break;
    case RPG_NVC8B5_SET_SEMAPHORE_B:
      c->ce_sem = (c->ce_sem & ~0xffffffffull) | v;
      break;
    case RPG_NVC8B5_SET_SEMAPHORE_PAYLOAD:
      c->ce_payload = v;
      break;
    case RPG_NVC8B5_OFFSET_IN_UPPER:
      c->ce_in = (c->ce_in & 0xffffffffull) | ((uint64_t)(v & 0x1ffffff) << 32);
      break;
    case RPG_NVC8B5_OFFSET_IN_LOWER:
      c->ce_in = (c->ce_in & ~0xffffffffull) | v;
      break;
    case RPG_NVC8B5_OFFSET_OUT_UPPER:
      c->ce_out = (c->ce_out & 0xffffffffull) | ((uint64_t)(v & 0x1ffffff) << 32);
      break;
    case RPG_NVC8B5_OFFSET_OUT_LOWER:
      c->ce_out = (c->ce_out & ~0xffffffffull) | v;
      break;
    case RPG_NVC6B5_PITCH_IN:
      c->ce_pitch_in = v;
      break;
    case RPG_NVC6B5_PITCH_OUT:
      c->ce_pitch_out = v;
      break;
    case RPG_NVC8B5_LINE_LENGTH_IN:
      c->ce_line = v;
      break;
    case RPG_NVC6B5_LINE_COUNT:
      c->ce_count = v;
      break;
    case RPG_NVC8B5_SET_REMAP_CONST_A:
      c->ce_const_a = v;
      break;
    case RPG_NVC8B5_SET_REMAP_COMPONENTS:
      c->ce_remap = v;
      break;
    case RPG_NVC8B5_LAUNCH_DMA:
      ce_launch(c, v);
      break;
    default:
      break;
  }
}

/* 0 done, 2: a launch (compute work) */
static int compute_method(struct channel* c, uint32_t m, uint32_t v) {
  switch (m) {
    case RPG_NVC6C0_SEND_PCAS_A:
    case RPG_NVC6C0_SEND_SIGNALING_PCAS_B:
    case RPG_NVC6C0_SEND_SIGNALING_PCAS2_B:
      return 2;
    case RPG_NVC6C0_SET_REPORT_SEMAPHORE_A:
      c->rs_addr = (c->rs_addr & 0xffffffffull) | ((uint64_t)(v & 0x1ffffff) << 32);
      return 0;
    case RPG_NVC6C0_SET_REPORT_SEMAPHORE_B:
      c->rs_addr = (c->rs_addr & ~0xffffffffull) | v;
      return 0;
    case RPG_NVC6C0_SET_REPORT_SEMAPHORE_C:
      c->rs_payload = v;
      return 0;
    case RPG_NVC6C0_SET_REPORT_SEMAPHORE_D:
      if (FIELD(v, RPG_NVC6C0_SET_REPORT_SEMAPHORE_D_OPERATION) ==
          RPG_NVC6C0_SET_REPORT_SEMAPHORE_D_OPERATION_RELEASE) {
        int one = FIELD(v, RPG_NVC6C0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE) ==
                  RPG_NVC6C0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_ONE_WORD;
        write_sem(c->rs_addr, c->rs_payload, 0, !one);
      }
      return 0;
    default:
      return 0;
  }
}

/* One method to subchannel `sub`: 0 done, 1 retry (acquire), 2 compute work. */
static int method(struct channel* c, int sub, uint32_t m, uint32_t v) {
  if (m < 0x100) return host_method(c, m, v, sub);
  uint32_t cls = c->subch[sub & 7];
  if ((cls & 0xff) == 0xb5) {
    ce_method(c, m, v);
    return 0;
  }
  if ((cls & 0xff) == 0xc0) return compute_method(c, m, v);
  return 0; /* 3D and other engines: state the replay does not need */
}

static int is_launch(uint32_t cls, uint32_t m) {
  return (cls & 0xff) == 0xc0 &&
         (m == RPG_NVC6C0_SEND_PCAS_A || m == RPG_NVC6C0_SEND_SIGNALING_PCAS_B ||
          m == RPG_NVC6C0_SEND_SIGNALING_PCAS2_B);
}

/* Where a walk of a pushbuffer segment stopped: the header of the method that stopped it, and
 * the dword after that method's data. */
struct pb_stop {
  uint32_t at, next;
};
typedef int (*method_fn)(void* ctx, int sub, uint32_t m, uint32_t v);

/* Calls fn for each method of segment pb[0, n) from header dword `from` (method headers of
 * cl906f.h); stops at the first non-zero return, which it returns, with where in *w. */
static int walk_segment(const uint32_t* pb, uint32_t n, uint32_t from, method_fn fn, void* ctx,
                        struct pb_stop* w) {
  uint32_t i = from;
  while (i < n) {
    uint32_t h = pb[i];
    uint32_t op = (uint32_t)FIELD(h, RPG_NV906F_DMA_SEC_OP);
    uint32_t m = (uint32_t)FIELD(h, RPG_NV906F_DMA_METHOD_ADDRESS) << 2;
    int sub = (int)FIELD(h, RPG_NV906F_DMA_METHOD_SUBCHANNEL);
    uint32_t cnt = (uint32_t)FIELD(h, RPG_NV906F_DMA_METHOD_COUNT);
    int r = 0;
    if (op == RPG_NV906F_DMA_SEC_OP_IMMD_DATA_METHOD) {
      r = fn(ctx, sub, m, cnt);
      cnt = 0;
    } else if (op == RPG_NV906F_DMA_SEC_OP_END_PB_SEGMENT) {
      break;
    } else if (op == RPG_NV906F_DMA_SEC_OP_INC_METHOD ||
               op == RPG_NV906F_DMA_SEC_OP_NON_INC_METHOD || op == RPG_NV906F_DMA_SEC_OP_ONE_INC ||
               (op == RPG_NV906F_DMA_SEC_OP_GRP0_USE_TERT &&
                FIELD(h, RPG_NV906F_DMA_TERT_OP) == RPG_NV906F_DMA_TERT_OP_GRP0_INC_METHOD) ||
               (op == RPG_NV906F_DMA_SEC_OP_GRP2_USE_TERT &&
                FIELD(h, RPG_NV906F_DMA_TERT_OP) == RPG_NV906F_DMA_TERT_OP_GRP2_NON_INC_METHOD)) {
      int inc = op == RPG_NV906F_DMA_SEC_OP_INC_METHOD || op == RPG_NV906F_DMA_SEC_OP_GRP0_USE_TERT;
      for (uint32_t k = 0; k < cnt && i + 1 + k < n && r == 0; ++k) {
        uint32_t mk = inc ? m + 4 * k : op == RPG_NV906F_DMA_SEC_OP_ONE_INC && k > 0 ? m + 4 : m;
        r = fn(ctx, sub, mk, pb[i + 1 + k]);
      }
    } else {
      cnt = 0; /* sub-device masks and reserved opcodes carry no data */
    }
    if (r != 0) {
      w->at = i;
      w->next = i + 1 + cnt;
      return r;
    }
    i += 1 + cnt;
  }
  w->at = w->next = n;
  return 0;
}

static int exec_fn(void* ctx, int sub, uint32_t m, uint32_t v) {
  return method((struct channel*)ctx, sub, m, v);
}

/* The semaphore release a launch was to be followed by: scanned in the rest of the segment. */
struct wait_scan {
  struct rp_wait w;
  uint64_t addr, payload;
};
static int wait_fn(void* ctx, int sub, uint32_t m, uint32_t v) {
  struct wait_scan* s = (struct wait_scan*)ctx;
  (void)sub;
  if (m == RPG_NVC86F_SEM_ADDR_LO) s->addr = (s->addr & ~0xffffffffull) | (v & ~3u);
  if (m == RPG_NVC86F_SEM_ADDR_HI)
    s->addr = (s->addr & 0xffffffffull) | ((uint64_t)(v & 0x1ffffff) << 32);
  if (m == RPG_NVC86F_SEM_PAYLOAD_LO) s->payload = v;
  if (m == RPG_NVC86F_SEM_EXECUTE &&
      FIELD(v, RPG_NVC86F_SEM_EXECUTE_OPERATION) == RPG_NVC86F_SEM_EXECUTE_OPERATION_RELEASE) {
    s->w.gpu_va = s->addr;
    s->w.payload = s->payload;
    s->w.method = m;
    return 1;
  }
  return 0;
}
static void record_wait(struct channel* c, const uint32_t* pb, uint32_t n, uint32_t from) {
  struct wait_scan s = {{0, 0, c->handle, c->subch[1], 0, 0}, c->sem_addr, c->sem_payload};
  struct pb_stop w;
  walk_segment(pb, n, from, wait_fn, &s, &w);
  uint32_t k = __atomic_fetch_add(&rs.st->n_waits, 1, __ATOMIC_ACQ_REL);
  if (k < RP_MAX_WAITS) rs.st->waits[k] = s.w;
}

/* Runs one pushbuffer segment from c->pb_pos: 0 done, 1 retry later, 2 stopped at work. */
static int run_segment(struct channel* c, const uint32_t* pb, uint32_t n) {
  struct pb_stop w;
  int r = walk_segment(pb, n, c->pb_pos, exec_fn, c, &w);
  if (r == 1) {
    c->pb_pos = w.at;
    return 1;
  }
  if (r == 2) {
    c->pb_pos = w.at; /* where the work stopped: the report counts the launches from there */
    __atomic_fetch_add(&rs.st->gpu_launches, 1, __ATOMIC_RELAXED);
    record_wait(c, pb, n, w.next);
    c->blocked = 1;
    return 2;
  }
  c->pb_pos = 0;
  return 0;
}

/* Counts the compute launches of the work a channel has not carried out (from GPGet and the
 * stopped entry's position up to GPPut), following the subchannel bindings it sets. */
struct launch_scan {
  uint32_t subch[8];
  uint32_t launches;
};
static int launch_fn(void* ctx, int sub, uint32_t m, uint32_t v) {
  struct launch_scan* s = (struct launch_scan*)ctx;
  if (m == RPG_NVC86F_SET_OBJECT) s->subch[sub & 7] = v & 0xffff;
  /* One launch: SEND_PCAS_A (the QMD), then SEND_SIGNALING_PCAS*_B (what to do with it). */
  if (m == RPG_NVC6C0_SEND_PCAS_A && is_launch(s->subch[sub & 7], m)) ++s->launches;
  return 0;
}
static uint32_t pending_launches(const struct channel* c, uint64_t ring, uint32_t put) {
  struct launch_scan s;
  memcpy(s.subch, c->subch, sizeof s.subch);
  s.launches = 0;
  for (uint32_t g = c->gp_get, first = 1; g != put; g = (g + 1) % c->entries, first = 0) {
    const uint32_t* e = (const uint32_t*)(uintptr_t)(ring + (uint64_t)g * 8);
    uint64_t va = ((uint64_t)FIELD(e[0], RPG_NVC86F_GP_ENTRY0_GET) << 2) |
                  ((uint64_t)FIELD(e[1], RPG_NVC86F_GP_ENTRY1_GET_HI) << 32);
    uint32_t len = (uint32_t)FIELD(e[1], RPG_NVC86F_GP_ENTRY1_LENGTH);
    uint64_t pb = len != 0 ? va_cpu(va, (uint64_t)len * 4) : 0;
    if (pb == 0) continue;
    struct pb_stop w;
    /* The stopped entry: from where it stopped (a launch there counts: it was not carried out). */
    walk_segment((const uint32_t*)(uintptr_t)pb, len, first ? c->pb_pos : 0, launch_fn, &s, &w);
  }
  return s.launches;
}

/* What the channel left undone, for the report (rp_state.channels). */
static void publish(struct channel* c, int k, uint64_t ring, uint32_t put, uint32_t stop) {
  if (k >= RP_MAX_CHANNELS) return;
  uint32_t pending = put < c->entries ? (put + c->entries - c->gp_get) % c->entries : 0;
  struct rp_channel_state* s = &rs.st->channels[k];
  if (s->handle == c->handle && s->stop == stop && s->pending == pending &&
      c->published_pos == c->pb_pos) {
    return; /* unchanged since the last pass */
  }
  struct rp_channel_state n = {c->handle, c->cls, stop, pending, 0, 0, 0, 0, 0};
  if (pending != 0 && ring != 0) n.launches = pending_launches(c, ring, put);
  if (stop == RP_CH_ACQUIRE) {
    n.acq_op = c->acq_op;
    n.sem_va = c->sem_addr;
    n.want = c->acq_want;
    n.value = c->acq_value;
  }
  *s = n;
  c->published_pos = c->pb_pos;
  uint32_t have = __atomic_load_n(&rs.st->n_channels, __ATOMIC_ACQUIRE);
  if ((uint32_t)k + 1 > have)
    __atomic_store_n(&rs.st->n_channels, (uint32_t)k + 1, __ATOMIC_RELEASE);
}

/* Follows GPPut of every channel once; returns whether anything was done. */
static int step(void) {
  int did = 0;
  rt_lock(&lock);
  for (int k = 0; k < nchans; ++k) {
    struct channel* c = &chans[k];
    if (!c->active || c->entries == 0) continue;
    volatile uint32_t* userd = userd_of(c);
    uint64_t ring = va_cpu(c->gpfifo_va, (uint64_t)c->entries * RPG_NVC86F_GP_ENTRY__SIZE);
    if (userd == NULL || ring == 0) continue;
    uint32_t put = userd[RPG_NVC86F_USERD_GP_PUT / 4];
    uint32_t stop = c->blocked ? RP_CH_LAUNCH : RP_CH_IDLE;
    while (c->gp_get != put && put < c->entries && !c->blocked) {
      const uint32_t* e = (const uint32_t*)(uintptr_t)(ring + (uint64_t)c->gp_get * 8);
      uint64_t va = ((uint64_t)FIELD(e[0], RPG_NVC86F_GP_ENTRY0_GET) << 2) |
                    ((uint64_t)FIELD(e[1], RPG_NVC86F_GP_ENTRY1_GET_HI) << 32);
      uint32_t len = (uint32_t)FIELD(e[1], RPG_NVC86F_GP_ENTRY1_LENGTH);
      int r = 0;
      if (len != 0) {
        uint64_t pb = va_cpu(va, (uint64_t)len * 4);
        if (pb == 0) { /* not mapped (yet): try again later */
          stop = RP_CH_UNMAPPED;
          break;
        }
        r = run_segment(c, (const uint32_t*)(uintptr_t)pb, len);
      }
      if (r != 0) {
        stop = r == 1 ? RP_CH_ACQUIRE : RP_CH_LAUNCH;
        break;
      }
      c->gp_get = (c->gp_get + 1) % c->entries;
      userd[RPG_NVC86F_USERD_GP_GET / 4] = c->gp_get;
      __atomic_fetch_add(&rs.st->gpu_entries, 1, __ATOMIC_RELAXED);
      did = 1;
    }
    publish(c, k, ring, put, stop);
  }
  rt_unlock(&lock);
  if (did) rs_progress();
  return did;
}

static void* gpu_thread(void* arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  long idle_ns = 20000;
  for (;;) {
    if (step()) {
      idle_ns = 20000;
      continue;
    }
    struct timespec ts = {0, idle_ns};
    RT_SYS(SYS_nanosleep, &ts, 0, 0);
    if (idle_ns < 2000000) idle_ns *= 2;
  }
  return NULL;
}

void rs_gpu_poke(void) {
  if (nchans == 0 || __atomic_load_n(&thread_started, __ATOMIC_ACQUIRE)) return;
  if (__atomic_exchange_n(&thread_started, 1, __ATOMIC_ACQ_REL)) return;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &a, gpu_thread, NULL) != 0) thread_started = 0;
  pthread_attr_destroy(&a);
}
