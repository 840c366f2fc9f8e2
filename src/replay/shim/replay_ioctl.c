/* ioctl on a replay device fd: the live call's buffers are found as the recorders find them
 * (nv_ioctl_abi.h), its identity read through the answer table's escape layouts, the matcher
 * picks the recorded call that answers it, and only the bytes the kernel changed in the recording
 * are written back (the caller's pointers and fds stay its own). Unrecorded calls get the policy
 * of docs/replay.md. The fake GPU learns mappings and channels from the answers. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "replay_shim.h"

#define NV_OK 0u
#define NV_ERR_NOT_SUPPORTED 0x56u
#define ARG_MAX_BYTES 16384u
#define XFER_MAX_BYTES 4096u
#define CHANNEL_PARAMS_MAX 4096u
#define MAX_MEMBERS 8
/* The largest parameter structure with pointer rules is 3,616 bytes (every branch). */
#define RULE_PARAMS_MAX 4096u

struct live_buf {
  uint64_t addr;
  uint64_t size;
  int present;
  uint64_t over;   /* the size when it is over NVTR_MAX_BUFFER (then size is 0) */
  int class_sized; /* RM alloc parameters with paramsSize 0, sized by the class */
};

static uint32_t u32_at(const uint8_t* p, uint64_t len, int32_t off) {
  if (off < 0 || (uint64_t)off + 4 > len) return 0;
  return nvtr_load_u32(p + off);
}
static uint64_t u64_at(const uint8_t* p, uint64_t len, int32_t off) {
  if (off < 0 || (uint64_t)off + 8 > len) return 0;
  return nvtr_load_u64(p + off);
}

static const struct nvtr_uvm_branch* uvm_branch(void) {
  static const struct nvtr_uvm_branch* b;
  if (b == NULL) b = nvtr_uvm_branch_for_major(rs.t->driver_major);
  return b;
}

/* RM sizes (class-sized allocation parameters) and pointer rules of the trace's driver branch. */
static const struct nvtr_rm_branch* rm_branch(void) {
  static const struct nvtr_rm_branch* b;
  if (b == NULL) b = nvtr_rm_branch_for_major(rs.t->driver_major);
  return b;
}

static int role_buf(const char* role, int in_xfer) {
  if (role[0] == 'p') return in_xfer ? RP_BUF_XPARAMS : RP_BUF_PARAMS;
  if (role[0] == 'r') return RP_BUF_RIGHTS;
  return RP_BUF_XFER;
}

static void add_plans(struct live_buf* b, struct nvtr_buf_plan* plan, const struct nvtr_buf_plan* p,
                      int n, int in_xfer) {
  for (int i = 0; i < n; ++i) {
    int k = role_buf(p[i].role, in_xfer);
    plan[k] = p[i];
    b[k].addr = p[i].addr;
    int over = p[i].size > NVTR_MAX_BUFFER;
    b[k].size = over ? 0 : p[i].size;
    b[k].over = over ? p[i].size : 0;
    b[k].present = 1;
    b[k].class_sized = p[i].class_sized;
  }
}

static uint64_t log_payload(uint64_t size) {
  return sizeof(struct rp_log_buf) + ((2 * size + 7) & ~(uint64_t)7);
}

#define NV_ESC_RM_ALLOC_MEMORY_NR 0x27               /* nv_escape.h */
#define NV01_MEMORY_SYSTEM_OS_DESCRIPTOR_CLASS 0x71u /* cl0071.h */

/* What the fake GPU learns from an answered call. */
static void tell_gpu(const struct rp_escape* esc, const struct rp_uvm* uvm,
                     const struct rp_event* e, const struct rp_ident* id, uint64_t id_addr,
                     uint64_t id_size) {
  const struct rp_gpu_layout* g = &rs.t->gpu;
  uint8_t post[256];
  uint64_t n = id_size < sizeof post ? id_size : sizeof post;
  n = rs_read(id_addr, post, n);
  if (esc != NULL && esc->status_off >= 0 && u32_at(post, n, esc->status_off) != NV_OK) return;
  if (uvm != NULL && uvm->status_off >= 0 && u32_at(post, n, uvm->status_off) != NV_OK) return;
  if (esc != NULL && (esc->flags & RP_ESCF_ALLOC) && rs_is_channel_class(id->cls)) {
    uint8_t params[CHANNEL_PARAMS_MAX];
    int32_t size = rs_class_size(id->cls);
    uint64_t p = u64_at(post, n, 16); /* pAllocParms of NVOS21 and NVOS64 (nvos.h) */
    if (size > 0 && (uint32_t)size <= sizeof params) {
      uint64_t got = rs_read(p, params, (uint64_t)size);
      /* The handle as the program named it (hObjectNew of NVOS21/NVOS64): an answer that was a
       * failure in the recording (and injected a success) has no recorded new object. */
      uint32_t h = e->h_new != 0 ? e->h_new : u32_at(post, n, 8);
      rs_gpu_channel(h, id->cls, params, got);
    }
  } else if (esc != NULL && id->nr == NV_ESC_RM_ALLOC_MEMORY_NR &&
             id->cls == NV01_MEMORY_SYSTEM_OS_DESCRIPTOR_CLASS) {
    /* Memory of the program's own that RM describes to the GPU (libcuda's staging buffers):
     * NVOS02_PARAMETERS (nvos.h) pMemory at 24, limit at 32, inside
     * nv_ioctl_nvos02_parameters_with_fd at 0. The GPU sees it where the program does. */
    uint32_t h = e->h_new != 0 ? e->h_new : u32_at(post, n, 8);
    rs_gpu_os_memory(h, u64_at(post, n, 24), u64_at(post, n, 32) + 1);
  } else if (esc != NULL && (esc->flags & RP_ESCF_MAP)) {
    /* The caller's fd for the mapping (an input: the answer leaves it as the program wrote it). */
    int fd = g->map_fd >= 0 && (uint64_t)g->map_fd + 4 <= n ? (int)u32_at(post, n, g->map_fd) : -1;
    rs_gpu_map_memory(rs_handle(u32_at(post, n, g->map_hmemory)), u64_at(post, n, g->map_offset),
                      u64_at(post, n, g->map_length), u64_at(post, n, g->map_linear), fd);
  } else if (esc != NULL && (esc->flags & RP_ESCF_MAP_DMA)) {
    rs_gpu_map_dma(rs_handle(u32_at(post, n, g->dma_hmemory)), u64_at(post, n, g->dma_offset),
                   u64_at(post, n, g->dma_length), u64_at(post, n, g->dma_dma_offset));
  } else if (uvm != NULL && (uvm->flags & RP_UVMF_MAP_EXTERNAL)) {
    rs_gpu_map_external(rs_handle(u32_at(post, n, g->map_ext_hmemory)),
                        u64_at(post, n, g->map_ext_offset), u64_at(post, n, g->map_ext_length),
                        u64_at(post, n, g->map_ext_base));
  } else if (esc != NULL && (esc->flags & RP_ESCF_FREES)) {
    rs_gpu_free(id->h_obj);
  }
}

/* ---- one live call ---- */

/* A live ioctl as the replay reads it: its buffers (found as the recorders find them), its
 * identity, and the buffers behind pointer members that the answer or the log need. */
struct live_call {
  int fd, idx, kind;
  uint32_t req;
  struct nvtr_buf_plan ap; /* the argument's plan */
  struct live_buf b[RP_BUF_COUNT];
  struct nvtr_buf_plan plan[RP_BUF_COUNT]; /* the planner's view of each buffer (its rules) */
  uint8_t argb[ARG_MAX_BYTES];
  uint64_t alen;
  uint8_t xb[XFER_MAX_BYTES];
  struct rp_ident id;
  const uint8_t* idb; /* the bytes the identity is read from: the argument, or an XFER's target */
  uint64_t idlen, id_addr, id_size;
  const struct rp_escape* esc;
  const struct rp_uvm* uvm;
  /* Buffers behind pointer members (v2 traces, synthesized outputs, the planner's finds). */
  struct live_buf mb[MAX_MEMBERS];
  uint32_t mb_patch[MAX_MEMBERS]; /* the recorded member it answers, or UINT32_MAX */
  uint8_t mb_parent[MAX_MEMBERS];
  uint32_t mb_off[MAX_MEMBERS];
  int nmb;
  uint64_t payload; /* bytes of the log record's buffers */
};

/* The buffers of an RM escape (an XFER's inner one too) and the members its identity reads. */
static void read_escape(struct live_call* L) {
  uint32_t r32 = L->req;
  L->id.nr = NVTR_IOC_NR(r32);
  uint32_t esize = NVTR_IOC_SIZE(r32);
  struct nvtr_buf_plan np[2];
  int n = nvtr_plan_nested(L->kind, r32, L->argb, L->alen, rm_branch(), np);
  add_plans(L->b, L->plan, np, n, 0);
  if (L->b[RP_BUF_XFER].present) {
    const struct live_buf* x = &L->b[RP_BUF_XFER];
    uint64_t xs = x->size < sizeof L->xb ? x->size : sizeof L->xb;
    uint64_t xlen = rs_read(x->addr, L->xb, xs);
    L->id.nr = nvtr_load_u32(L->argb + NVTR_XFER_CMD) & 0xffu;
    esize = nvtr_load_u32(L->argb + NVTR_XFER_ARG_SIZE);
    L->idb = L->xb;
    L->idlen = xlen;
    L->id_addr = x->addr;
    L->id_size = x->size;
    n = nvtr_plan_xfer_inner(L->argb, L->xb, xlen, rm_branch(), np);
    add_plans(L->b, L->plan, np, n, 1);
  }
  L->esc = rs_escape(L->id.nr, esize);
  if (L->esc != NULL && L->idlen >= esize) {
    const struct rp_escape* e = L->esc;
    L->id.cmd = u32_at(L->idb, L->idlen, e->cmd_off);
    L->id.cls = u32_at(L->idb, L->idlen, e->class_off);
    L->id.h_client = rs_handle(u32_at(L->idb, L->idlen, e->client_off));
    L->id.h_obj = rs_handle(u32_at(L->idb, L->idlen, e->object_off));
  }
}

/* Reads the live call: its argument, its nested buffers, its identity. */
static void read_call(struct live_call* L, int fd, int idx, uint32_t req, uint64_t arg) {
  L->fd = fd;
  L->idx = idx;
  L->req = req;
  L->kind = nvtr_dev_kind_of_path(rs_path(idx));
  memset(L->b, 0, sizeof L->b);
  memset(L->plan, 0, sizeof L->plan);
  L->ap = nvtr_plan_arg(L->kind, req, arg, uvm_branch());
  L->b[RP_BUF_ARG] = (struct live_buf){.addr = arg, .size = L->ap.size, .present = 1};
  L->alen = rs_read(arg, L->argb, L->ap.size < sizeof L->argb ? L->ap.size : sizeof L->argb);
  if (L->ap.bounded) L->b[RP_BUF_ARG].size = L->alen;
  L->id = (struct rp_ident){RP_IOCTL, (uint32_t)idx, req, 0, 0, 0, 0, 0};
  L->idb = L->argb;
  L->idlen = L->alen;
  L->id_addr = arg;
  L->id_size = L->ap.size;
  L->esc = NULL;
  L->uvm = NULL;
  L->nmb = 0;
  L->payload = 0;
  if (L->kind == NVTR_DEV_UVM) {
    L->id.nr = req;
    L->uvm = rs_uvm(req);
  } else if (NVTR_IOC_TYPE(req) == NVTR_NV_IOCTL_MAGIC) {
    read_escape(L);
  }
}

/* The inputs that tell calls of one identity apart (rp_input_digest): an RM escape's
 * parameters, a UVM call's argument. */
static uint32_t input_digest(const struct live_call* L) {
  const struct live_buf* in = L->b[RP_BUF_XPARAMS].present  ? &L->b[RP_BUF_XPARAMS]
                              : L->b[RP_BUF_PARAMS].present ? &L->b[RP_BUF_PARAMS]
                                                            : NULL;
  if (in != NULL && in->addr != 0 && in->size != 0) {
    uint8_t inb[RP_DIGEST_MAX];
    return rp_input_digest(inb,
                           rs_read(in->addr, inb, in->size < sizeof inb ? in->size : sizeof inb));
  }
  return L->kind == NVTR_DEV_UVM ? rp_input_digest(L->argb, L->alen) : 0;
}

static void add_member(struct live_call* L, uint64_t addr, uint64_t size, uint32_t patch,
                       int parent, uint32_t ptr_off) {
  int k = L->nmb++;
  L->mb[k] = (struct live_buf){.addr = addr, .size = size, .present = 1};
  L->mb_patch[k] = patch;
  L->mb_parent[k] = (uint8_t)parent;
  L->mb_off[k] = ptr_off;
  L->payload += log_payload(size);
}

/* Buffers behind pointer members the answer holds (v2 traces, synthesized outputs): located
 * through the live pointer at the recorded place. */
static void recorded_members(struct live_call* L, const struct rp_event* e) {
  const struct rp_patch* patches = (const struct rp_patch*)((const char*)rs.t + rs.t->off_patches);
  for (uint32_t i = 0; e != NULL && i < e->patch_count && L->nmb < MAX_MEMBERS; ++i) {
    const struct rp_patch* p = &patches[e->patch_first + i];
    if (p->buf != RP_BUF_MEMBER || p->parent >= RP_BUF_MEMBER || !L->b[p->parent].present) continue;
    const struct live_buf* parent = &L->b[p->parent];
    uint64_t ptr = 0;
    if (p->ptr_off + 8 > parent->size || rs_read(parent->addr + p->ptr_off, &ptr, 8) != 8 ||
        ptr == 0) {
      continue;
    }
    add_member(L, ptr, p->bufsize, e->patch_first + i, p->parent, p->ptr_off);
  }
}

/* And the ones the recording does not hold (a capture, a buffer over the recorder's cap): the
 * planner finds them in the live parameters, as the recorders do, so the replayed trace has the
 * buffers a recording of this run would have (answered or not). */
static void planned_members(struct live_call* L) {
  for (int k = RP_BUF_PARAMS; k <= RP_BUF_XPARAMS && L->nmb < MAX_MEMBERS; ++k) {
    if ((k != RP_BUF_PARAMS && k != RP_BUF_XPARAMS) || !L->b[k].present || L->b[k].size == 0 ||
        L->plan[k].rule_kind == NVTR_NO_RULES) {
      continue;
    }
    uint8_t pb[RULE_PARAMS_MAX];
    uint64_t plen = rs_read(L->b[k].addr, pb, L->b[k].size < sizeof pb ? L->b[k].size : sizeof pb);
    struct nvtr_buf_plan q[NVTR_MAX_POINTEES];
    int nq = nvtr_plan_pointees(rm_branch(), &L->plan[k], pb, plen, q, NVTR_MAX_POINTEES, NULL);
    for (int i = 0; i < nq && L->nmb < MAX_MEMBERS; ++i) {
      int known = 0;
      for (int j = 0; j < L->nmb; ++j)
        known |= L->mb_parent[j] == k && L->mb_off[j] == q[i].ptr_off;
      if (known || q[i].size == 0 || q[i].size > NVTR_MAX_BUFFER) continue;
      add_member(L, q[i].addr, q[i].size, UINT32_MAX, k, q[i].ptr_off);
    }
  }
}

/* The log record of the call, with every buffer's bytes before the answer. */
static void log_before(const struct live_call* L, struct rs_rec* w, struct rp_log_buf** lb) {
  uint64_t payload = L->payload;
  for (int k = 0; k < RP_BUF_COUNT; ++k) {
    if (L->b[k].present) payload += log_payload(L->b[k].size);
  }
  if (!rs_log_begin(w, RP_IOCTL, payload)) return;
  w->r->fd = L->fd;
  w->r->path = L->idx;
  w->r->req = L->req;
  for (int k = 0; k < RP_BUF_COUNT; ++k) {
    const struct live_buf* b = &L->b[k];
    if (b->present) lb[k] = rs_log_buf(w, (uint16_t)k, 0, b->addr, (uint32_t)b->size);
    if (b->over != 0 && lb[k] != NULL) { /* too large to read: the trace says so */
      lb[k]->pad |= RP_LOG_BUF_OVER_CAP;
      lb[k]->pad2 = b->over > UINT32_MAX ? UINT32_MAX : (uint32_t)b->over;
    }
    if (b->class_sized && lb[k] != NULL) lb[k]->pad |= RP_LOG_BUF_CLASS_SIZED;
  }
  if (L->ap.bounded && lb[RP_BUF_ARG] != NULL) { /* read with a bound: the trace says so */
    lb[RP_BUF_ARG]->pad |= RP_LOG_BUF_BOUNDED;
    lb[RP_BUF_ARG]->pad2 = (uint32_t)L->ap.size;
  }
  for (int k = 0; k < L->nmb; ++k) {
    lb[RP_BUF_COUNT + k] = rs_log_buf(w, (uint16_t)(RP_BUF_MEMBER | (L->mb_parent[k] << 8)),
                                      L->mb_off[k], L->mb[k].addr, (uint32_t)L->mb[k].size);
  }
}

/* Writes the recorded answer `e` over the live buffers (only the bytes the kernel changed), binds
 * a created object's live handle, and tells the fake GPU. Returns the recorded result. */
static long answer_recorded(const struct live_call* L, const struct rp_event* e, int* err) {
  const struct rp_patch* patches = (const struct rp_patch*)((const char*)rs.t + rs.t->off_patches);
  const uint8_t* blob = (const uint8_t*)rs.t + rs.t->off_blob;
  for (uint32_t i = 0; i < e->patch_count; ++i) {
    const struct rp_patch* p = &patches[e->patch_first + i];
    const struct live_buf* t = NULL;
    if (p->buf < RP_BUF_MEMBER) {
      t = &L->b[p->buf];
    } else {
      for (int k = 0; k < L->nmb; ++k) {
        if (L->mb_patch[k] == e->patch_first + i) t = &L->mb[k];
      }
    }
    if (t == NULL || !t->present || t->addr == 0 || p->off >= t->size) continue;
    uint64_t len = p->len < t->size - p->off ? p->len : t->size - p->off;
    rt_write(t->addr + p->off, blob + p->data, len);
  }
  *err = e->ret == -1 ? e->err : 0;
  if ((e->flags & RP_EVF_CREATES) && L->esc != NULL && L->idlen >= L->esc->size) {
    uint32_t live_new = u32_at(L->idb, L->idlen, L->esc->new_off);
    if (live_new != 0 && live_new != e->h_new) rs_bind_handle(live_new, e->h_new);
  }
  if (e->ret == 0) tell_gpu(L->esc, L->uvm, e, &L->id, L->id_addr, L->id_size);
  return e->ret;
}

/* Unrecorded: frees, unmaps and closes succeed; anything else is not supported (in the status
 * member where the call has one, else EOPNOTSUPP). */
static long answer_unrecorded(const struct live_call* L, int* err, int* outcome) {
  int freelike = (L->esc != NULL && (L->esc->flags & RP_ESCF_FREELIKE)) ||
                 (L->uvm != NULL && (L->uvm->flags & RP_UVMF_FREELIKE));
  int32_t status_off = L->esc != NULL   ? L->esc->status_off
                       : L->uvm != NULL ? L->uvm->status_off
                                        : -1;
  uint32_t status = freelike ? NV_OK : NV_ERR_NOT_SUPPORTED;
  *outcome = freelike ? RP_OUT_FREELIKE : RP_OUT_NOT_SUPPORTED;
  *err = 0;
  if (status_off >= 0 && (uint64_t)status_off + 4 <= L->id_size &&
      rt_write(L->id_addr + (uint64_t)status_off, &status, 4) == 4) {
    return 0;
  }
  if (freelike) return 0;
  *err = EOPNOTSUPP;
  return -1;
}

long beh_ioctl(struct shim_call* c, int fd, unsigned long req, uint64_t arg, int via_syscall) {
  int idx = rs_fd_path(fd);
  if (idx < 0 || !rs_ready()) return shim_perform(c);
  if (rt_t.busy) { /* a signal handler inside the shim: nothing to answer it from */
    errno = ENOTTY;
    return -1;
  }
  (void)via_syscall;
  rt_t.busy = 1;
  uint64_t t0 = rt_now_ns();
  struct live_call L;
  read_call(&L, fd, idx, (uint32_t)req, arg);
  int twin_ok = L.esc != NULL && (L.esc->flags & RP_ESCF_CONTROL);
  struct rs_match m = rs_match(&L.id, twin_ok, input_digest(&L));
  const struct rp_event* e = m.event >= 0 ? rs_event((uint32_t)m.event) : NULL;
  recorded_members(&L, e);
  planned_members(&L);
  struct rs_rec w = {0};
  struct rp_log_buf* lb[RP_BUF_COUNT + MAX_MEMBERS];
  memset(lb, 0, sizeof lb);
  log_before(&L, &w, lb);

  int err = 0, outcome = m.outcome;
  long ret = e != NULL ? answer_recorded(&L, e, &err) : answer_unrecorded(&L, &err, &outcome);

  for (int k = 0; k < RP_BUF_COUNT + L.nmb; ++k) rs_log_post(lb[k]);
  if (w.r != NULL) {
    w.r->ret = ret;
    w.r->err = err;
    w.r->outcome = (uint32_t)outcome;
    w.r->answered = m.event;
    w.r->t_ns = t0;
    w.r->dur_ns = rt_now_ns() - t0;
    rs_log_commit(&w);
  }
  /* Progress is what the recording answers: a program that only repeats polls (twins) or asks
   * for what was never recorded is not getting anywhere. */
  if (e != NULL && outcome != RP_OUT_TWIN) rs_progress();
  rt_t.busy = 0;
  rs_gpu_poke();
  errno = err;
  return ret;
}
