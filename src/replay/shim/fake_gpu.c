/* The replay's minimal GPU (docs/replay.md, "The fake GPU").
 *
 * For each GPFIFO channel (its allocation parameters give the ring and USERD), a thread of the
 * shim follows GPPut in USERD, reads the ring's entries and the pushbuffer segments they point to
 * as the program wrote them, and carries out what needs no execution: host semaphore releases,
 * acquires and reductions, the copy engine's copies, fills and semaphores (copy_engine.c), and the
 * compute class's methods (launch.c): inline-to-memory writes (code, constant buffers, QMDs),
 * report semaphores, and launches, completed without being executed (--execute none: their releases
 * written, each logged with its kernel's code and constant buffer) or stopped at
 * (--execute stop: the channel holds there, GPGet stays, and the semaphore release that would
 * follow is recorded as what the program waits for). Memory: gpu_mem.c (CPU mappings and video
 * memory). Method layouts: generated/gpu_methods.h (from NVIDIA's class headers). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "../generated/gpu_methods.h"
#include "copy_engine.h"
#include "gpu_mem.h"
#include "launch.h"
#include "replay_shim.h"

#define FIELD(v, name) (((v) >> name##_LO) & ((1ull << (name##_HI - name##_LO + 1)) - 1))

#define MAX_CHANNELS 64

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
  /* the copy engine (copy_engine.h) */
  struct fg_copy ce;
  /* the compute engine (launch.h) */
  struct fg_compute comp;
  /* the acquire that is not met (RP_CH_ACQUIRE, RP_CH_COMPUTE) */
  uint32_t acq_op, acq_compute; /* acq_compute: a compute-class acquire */
  uint64_t acq_va, acq_want, acq_value;
  uint32_t published_pos; /* pb_pos when the channel's state was last published */
};

static struct channel chans[MAX_CHANNELS];
static int nchans;
static int thread_started;
static struct fg_stats compute_stats;
static struct fg_copy_stats copy_stats;
static uint64_t launches_stopped;
static int execute_stop = -1; /* --execute stop (RP_ENV_EXECUTE); -1: not read yet */

void rs_gpu_free(uint32_t handle) {
  gm_lock();
  for (int i = 0; i < nchans; ++i) {
    if (chans[i].handle == handle) chans[i].active = 0;
  }
  gm_free(handle);
  gm_unlock();
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
  gm_lock();
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
  gm_unlock();
}

void rs_gpu_atfork_child(void) {
  /* The parent carries on with its channels; this process's thread is gone. */
  thread_started = 0;
  for (int i = 0; i < nchans; ++i) chans[i].active = 0;
  gm_atfork_child();
}

static volatile uint32_t* userd_of(const struct channel* c) {
  uint64_t p = gm_object_cpu(c->userd_h, c->userd_off, 0x100);
  if (p == 0) p = gm_object_cpu(c->handle, 0, 0x100); /* USERD mapped through the channel */
  return (volatile uint32_t*)(uintptr_t)p;
}

/* ---- engines ---- */

static void write_sem(uint64_t va, uint64_t payload, int wide, int timestamp) {
  uint8_t* p = (uint8_t*)gm_span(va, timestamp ? 16 : wide ? 8 : 4);
  if (p == NULL) return;
  if (timestamp) __atomic_store_n((volatile uint64_t*)(p + 8), rt_now_ns(), __ATOMIC_RELEASE);
  if (wide || timestamp) {
    __atomic_store_n((volatile uint64_t*)p, payload, __ATOMIC_RELEASE);
  } else {
    __atomic_store_n((volatile uint32_t*)p, (uint32_t)payload, __ATOMIC_RELEASE);
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
      void* p = gm_span(c->sem_addr, wide ? 8 : 4);
      if (p == NULL) return 0; /* memory the replay cannot see: taken as met */
      uint64_t cur = wide ? __atomic_load_n((volatile uint64_t*)p, __ATOMIC_ACQUIRE)
                          : __atomic_load_n((volatile uint32_t*)p, __ATOMIC_ACQUIRE);
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
        c->acq_compute = 0;
        c->acq_op = op;
        c->acq_va = c->sem_addr;
        c->acq_want = want;
        c->acq_value = cur;
      }
      return met ? 0 : 1;
    }
    default:
      return 0; /* WFI, MEM_OP, non-stall interrupts, …: nothing to do without an engine */
  }
}

/* ---- compute (launch.c) ---- */

/* Up to n bytes at va, read in pieces up to where the memory ends: the bytes read. */
static uint32_t read_upto(uint64_t va, uint8_t* dst, uint32_t n) {
  uint32_t got = 0;
  while (got < n) {
    uint32_t k = n - got < 256 ? n - got : 256;
    if (gm_read(va + got, dst + got, k) != k) break;
    got += k;
  }
  return got;
}

/* The sink of completed launches: one RP_LOG_LAUNCH record each, with the kernel's code and c[0]
 * as the launch saw them (cudatool names the kernel by its code and cuts the parameters). */
static void log_launch(void* ctx, const struct fg_compute* comp, const struct fg_launch* l) {
  const struct channel* c = (const struct channel*)ctx;
  static uint8_t code[RP_LAUNCH_CODE], cb0[RP_LAUNCH_CB0]; /* the GPU thread's (lock held) */
  struct rp_log_launch h = {c->handle,
                            comp->cls,
                            l->qmd_va,
                            l->program,
                            {0},
                            {0},
                            l->shared_bytes,
                            l->registers,
                            l->major,
                            l->minor,
                            0,
                            0,
                            0,
                            0,
                            0};
  memcpy(h.grid, l->grid, sizeof h.grid);
  memcpy(h.block, l->block, sizeof h.block);
  if (l->cb_valid & 1u) {
    h.cb0_va = l->cb_va[0];
    h.cb0_size = l->cb_size[0];
    h.cb0_len = read_upto(h.cb0_va, cb0, h.cb0_size < RP_LAUNCH_CB0 ? h.cb0_size : RP_LAUNCH_CB0);
  }
  h.code_len = read_upto(l->program, code, RP_LAUNCH_CODE);
  __atomic_fetch_add(&rs.st->gpu_launches, 1, __ATOMIC_RELAXED);
  struct rs_rec w;
  if (!rs_log_begin(&w, RP_LOG_LAUNCH, sizeof h + h.code_len + h.cb0_len)) return;
  rs_log_bytes(&w, &h, sizeof h);
  rs_log_bytes(&w, code, h.code_len);
  rs_log_bytes(&w, cb0, h.cb0_len);
  rs_log_commit(&w);
}

/* The releases of the QMD a channel stopped at are what the program waits for. */
static void record_qmd_waits(struct channel* c) {
  uint8_t q[FG_QMD_MAX];
  struct fg_launch l;
  uint32_t n = read_upto(c->comp.stop_qmd, q, sizeof q);
  if (fg_qmd_decode(q, n, c->comp.stop_qmd, &l) != FG_QMD_OK) return;
  for (uint32_t i = 0; i < l.n_sems; ++i) {
    uint32_t k = __atomic_fetch_add(&rs.st->n_waits, 1, __ATOMIC_ACQ_REL);
    if (k >= RP_MAX_WAITS) return;
    struct rp_wait w = {l.sems[i].va,
                        l.sems[i].payload,
                        c->handle,
                        c->comp.cls,
                        RPG_NVC6C0_SEND_SIGNALING_PCAS2_B,
                        0};
    rs.st->waits[k] = w;
  }
}

/* A method of a compute class: 0 done, 1 retry (an acquire not met), 2 stopped at a launch. */
static int compute_method(struct channel* c, uint32_t cls, uint32_t m, uint32_t v) {
  if (execute_stop < 0) {
    const char* e = getenv(RP_ENV_EXECUTE);
    execute_stop = e != NULL && strcmp(e, "stop") == 0;
  }
  struct fg_sink sink = {c, log_launch};
  struct fg_env env = {gm_fg_mem(), &sink, &compute_stats, !execute_stop};
  c->comp.cls = cls;
  int r = fg_compute_method(&c->comp, &env, m, v);
  if (r == FG_RETRY) {
    c->acq_compute = 1;
    c->acq_op = RPG_NVC86F_SEM_EXECUTE_OPERATION_ACQUIRE; /* REPORT_SEMAPHORE_EXECUTE: equal */
    c->acq_va = c->comp.acq_va;
    c->acq_want = c->comp.acq_want;
    c->acq_value = c->comp.acq_value;
    return 1;
  }
  if (r == FG_STOP) {
    ++launches_stopped;
    __atomic_fetch_add(&rs.st->gpu_launches, 1, __ATOMIC_RELAXED);
    return 2;
  }
  return 0;
}

/* One method to subchannel `sub`: 0 done, 1 retry (acquire), 2 compute work. */
static int method(struct channel* c, int sub, uint32_t m, uint32_t v) {
  if (m < 0x100) return host_method(c, m, v, sub);
  uint32_t cls = c->subch[sub & 7];
  if ((cls & 0xff) == 0xb5) {
    uint64_t released = copy_stats.releases;
    fg_copy_method(&c->ce, gm_fg_mem(), &copy_stats, m, v);
    if (copy_stats.releases != released)
      __atomic_fetch_add(&rs.st->gpu_releases, copy_stats.releases - released, __ATOMIC_RELAXED);
    return 0;
  }
  if ((cls & 0xff) == 0xc0) return compute_method(c, cls, m, v);
  return 0; /* 3D and other engines: state the replay does not need */
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
    uint32_t had = __atomic_load_n(&rs.st->n_waits, __ATOMIC_ACQUIRE);
    record_qmd_waits(c);
    if (__atomic_load_n(&rs.st->n_waits, __ATOMIC_ACQUIRE) == had) record_wait(c, pb, n, w.next);
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
  /* One launch: SEND_PCAS_A (the QMD), then SEND_SIGNALING_PCAS*_B that schedules it. */
  if ((s->subch[sub & 7] & 0xff) == 0xc0 && fg_is_launch(m, v)) ++s->launches;
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
    uint64_t pb = len != 0 ? gm_cpu(va, (uint64_t)len * 4) : 0;
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
  if (stop == RP_CH_ACQUIRE || stop == RP_CH_COMPUTE) {
    n.acq_op = c->acq_op;
    n.sem_va = c->acq_va;
    n.want = c->acq_want;
    n.value = c->acq_value;
  }
  *s = n;
  c->published_pos = c->pb_pos;
  uint32_t have = __atomic_load_n(&rs.st->n_channels, __ATOMIC_ACQUIRE);
  if ((uint32_t)k + 1 > have)
    __atomic_store_n(&rs.st->n_channels, (uint32_t)k + 1, __ATOMIC_RELEASE);
}

/* The compute engines' and video memory's figures, for the report. */
static void publish_stats(void) {
  const struct fg_stats* f = &compute_stats;
  struct rp_compute_stats s = {f->launches,  f->null_grids,  f->releases,     f->lost,
                               f->i2m_bytes, f->deps_unread, f->block_linear, launches_stopped};
  rs.st->compute = s;
  gm_publish(&rs.st->vidmem);
}

/* Follows GPPut of every channel once; returns whether anything was done. */
static int step(void) {
  int did = 0;
  gm_lock();
  for (int k = 0; k < nchans; ++k) {
    struct channel* c = &chans[k];
    if (!c->active || c->entries == 0) continue;
    volatile uint32_t* userd = userd_of(c);
    uint64_t ring = gm_cpu(c->gpfifo_va, (uint64_t)c->entries * RPG_NVC86F_GP_ENTRY__SIZE);
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
        uint64_t pb = gm_cpu(va, (uint64_t)len * 4);
        if (pb == 0) { /* not mapped (yet): try again later */
          stop = RP_CH_UNMAPPED;
          break;
        }
        r = run_segment(c, (const uint32_t*)(uintptr_t)pb, len);
      }
      if (r != 0) {
        stop = r == 2 ? RP_CH_LAUNCH : c->acq_compute ? RP_CH_COMPUTE : RP_CH_ACQUIRE;
        break;
      }
      c->gp_get = (c->gp_get + 1) % c->entries;
      userd[RPG_NVC86F_USERD_GP_GET / 4] = c->gp_get;
      __atomic_fetch_add(&rs.st->gpu_entries, 1, __ATOMIC_RELAXED);
      did = 1;
    }
    publish(c, k, ring, put, stop);
  }
  publish_stats();
  gm_unlock();
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
