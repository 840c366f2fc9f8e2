/*
 * What the recorders need of the NVIDIA kernel-driver ioctl ABI to read argument buffers: the
 * request encoding, the escape numbers, where the pointers to nested parameter buffers sit, how
 * many bytes RM takes for a class's allocation parameters, and which pointer members of control
 * and allocation parameters RM follows (the second level). Plain C, shared by the ptrace recorder
 * (C++) and the preload shim (C), so that both read the same bytes. Values are written from
 * NVIDIA's open-gpu-kernel-modules headers, cited per item (paths in that repository), or
 * generated from them (generated/uvm_sizes.h, generated/rm_params.h); decoding the contents is
 * the decoder's job (src/rm/).
 */
#ifndef CUDATOOL_TRACE_NV_IOCTL_ABI_H
#define CUDATOOL_TRACE_NV_IOCTL_ABI_H

#include <stdint.h>
#include <string.h>

/* Linux request encoding (include/uapi/asm-generic/ioctl.h): nr 8 bits, type 8, size 14, dir 2. */
#define NVTR_IOC_NR(r) ((uint32_t)(r)&0xffu)
#define NVTR_IOC_TYPE(r) (((uint32_t)(r) >> 8) & 0xffu)
#define NVTR_IOC_SIZE(r) (((uint32_t)(r) >> 16) & 0x3fffu)
#define NVTR_IOC_DIR(r) (((uint32_t)(r) >> 30) & 0x3u)

/* src/nvidia/arch/nvalloc/unix/include/nv-ioctl-numbers.h: NV_IOCTL_MAGIC 'F', NV_IOCTL_BASE 200,
 * NV_ESC_CARD_INFO = BASE + 0, NV_ESC_IOCTL_XFER_CMD = BASE + 11. */
#define NVTR_NV_IOCTL_MAGIC 0x46u
#define NVTR_ESC_CARD_INFO 200u
#define NVTR_ESC_IOCTL_XFER_CMD 211u

/* src/nvidia/arch/nvalloc/unix/include/nv_escape.h */
#define NVTR_ESC_RM_FREE 0x29u
#define NVTR_ESC_RM_CONTROL 0x2au
#define NVTR_ESC_RM_ALLOC 0x2bu
#define NVTR_ESC_RM_MAP_MEMORY 0x4eu

/* src/common/sdk/nvidia/inc/nvos.h, NVOS54_PARAMETERS (RM control): hClient, hObject, cmd, flags
 * (4 x NvU32), params (NvP64, 8-aligned) at 16, paramsSize (NvU32) at 24, status; 32 bytes. */
#define NVTR_NVOS54_SIZE 32u
#define NVTR_NVOS54_PARAMS 16u
#define NVTR_NVOS54_PARAMS_SIZE 24u
/* nvos.h, NVOS21_PARAMETERS (RM alloc, short form): hRoot, hObjectParent, hObjectNew, hClass,
 * pAllocParms (NvP64) at 16, paramsSize at 24, status; 32 bytes. */
#define NVTR_NVOS21_SIZE 32u
#define NVTR_NVOS21_ALLOC_PARMS 16u
#define NVTR_NVOS21_PARAMS_SIZE 24u
/* nvos.h, NVOS64_PARAMETERS (RM alloc with rights): pAllocParms at 16, pRightsRequested (NvP64)
 * at 24, paramsSize at 32, flags, status; 48 bytes. */
#define NVTR_NVOS64_SIZE 48u
#define NVTR_NVOS64_ALLOC_PARMS 16u
#define NVTR_NVOS64_RIGHTS 24u
#define NVTR_NVOS64_PARAMS_SIZE 32u
/* src/common/sdk/nvidia/inc/rs_access.h: RS_ACCESS_MASK is SDK_RS_ACCESS_MAX_LIMBS (1) NvU32. */
#define NVTR_RS_ACCESS_MASK_SIZE 4u
/* kernel-open/common/inc/nv-ioctl.h, nv_ioctl_xfer_t: cmd (NvU32), size (NvU32), ptr (NvP64) at
 * 8; 16 bytes. */
#define NVTR_XFER_SIZE 16u
#define NVTR_XFER_CMD 0u
#define NVTR_XFER_ARG_SIZE 4u
#define NVTR_XFER_PTR 8u
/* RM map memory (NV_ESC_RM_MAP_MEMORY) takes nv_ioctl_nvos33_parameters_with_fd
 * (src/nvidia/arch/nvalloc/unix/include/nv-unix-nvos-params-wrappers.h): NVOS33_PARAMETERS and
 * an fd, 56 bytes, all in the argument itself. Its pLinearAddress is returned by the driver (the
 * offset the following mmap() uses), not a buffer: there is nothing nested to read. */
#define NVTR_NVOS33_WITH_FD_SIZE 56u

/* What a device path is, by its last component. */
enum nvtr_dev_kind {
  NVTR_DEV_OTHER = 0, /* a path --devices selected that is not an NVIDIA RM or UVM node */
  NVTR_DEV_RM = 1,    /* nvidiactl, nvidia0, nvidia1, …: RM escapes ('F' requests) */
  NVTR_DEV_UVM = 2,   /* nvidia-uvm, nvidia-uvm-tools: requests carry no size */
};

static inline int nvtr_dev_kind_of_path(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strcmp(base, "nvidiactl") == 0) return NVTR_DEV_RM;
  if (strcmp(base, "nvidia-uvm") == 0 || strcmp(base, "nvidia-uvm-tools") == 0) {
    return NVTR_DEV_UVM;
  }
  if (strncmp(base, "nvidia", 6) == 0 && base[6] >= '0' && base[6] <= '9') {
    const char* p = base + 6;
    while (*p >= '0' && *p <= '9') ++p;
    if (*p == '\0') return NVTR_DEV_RM;
  }
  return NVTR_DEV_OTHER;
}

/* UVM requests are plain numbers (kernel-open/nvidia-uvm/uvm_ioctl.h: UVM_IOCTL_BASE(i) is i on
 * Linux), so their parameter size comes from a table of the UVM_*_PARAMS structures of the
 * driver branch: src/rm/generated/uvm_sizes.h, generated with the decoder's tables
 * (tools/rm_tables). The recorders pick the branch once, at the start of a recording, from the
 * driver version (/proc/driver/nvidia/version) by the decoder's rule (rm::choose_branch): the
 * same major, else the nearest (a tie goes to the newer), else — no version — the newest. A
 * request the table does not know (or whose size was not measured) is read with a bound:
 * NVTR_UVM_BOUNDED_READ bytes, clipped at the end of the mapping. */
#include "generated/uvm_sizes.h"

#define NVTR_UVM_BOUNDED_READ 4096u

/* The driver major of a version text ("580.159.04", or an NVRM version line): the first run of
 * at least three digits that a '.' follows and no digit precedes; 0 when there is none. */
static inline int nvtr_driver_major(const char* text) {
  for (const char* p = text; p != NULL && *p != '\0'; ++p) {
    if (*p < '0' || *p > '9' || (p > text && p[-1] >= '0' && p[-1] <= '9')) continue;
    const char* q = p;
    unsigned long long v = 0; /* past INT_MAX it stops growing and means "no version" */
    while (*q >= '0' && *q <= '9') {
      if (v <= 0x7fffffffULL) v = v * 10 + (unsigned long long)(*q - '0');
      ++q;
    }
    if (q - p >= 3 && *q == '.') return v > 0x7fffffffULL ? 0 : (int)v;
    p = q - 1;
  }
  return 0;
}

/* The UVM size table for driver major `major` (0: unknown, the newest branch). */
static inline const struct nvtr_uvm_branch* nvtr_uvm_branch_for_major(int major) {
  const struct nvtr_uvm_branch* best = &nvtr_uvm_branches[NVTR_UVM_BRANCH_COUNT - 1];
  if (major <= 0) return best;
  long best_d = -1;
  for (int i = 0; i < NVTR_UVM_BRANCH_COUNT; ++i) {
    long d = (long)nvtr_uvm_branches[i].major - major;
    if (d < 0) d = -d;
    if (best_d < 0 || d <= best_d) { /* `<=`: on a tie the later (newer) branch wins */
      best_d = d;
      best = &nvtr_uvm_branches[i];
    }
  }
  return best;
}

/* The parameter size of UVM request `request` in branch `b`; -1 when the table does not know it
 * (then the recorders read with a bound). 0: the request takes no parameters. */
static inline int64_t nvtr_uvm_param_size(const struct nvtr_uvm_branch* b, uint32_t request) {
  if (b == NULL) return -1;
  uint32_t lo = 0, hi = b->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (b->sizes[mid].request < request) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < b->count && b->sizes[lo].request == request) return b->sizes[lo].size;
  return -1;
}

/* Largest buffer either recorder reads; a larger size is recorded as unreadable. */
#define NVTR_MAX_BUFFER (16u << 20)

/* RM's own sizes and pointer rules, per driver branch (tools/rm_tables, from RM's copy code:
 * resource_list.h and rmapiGetClassAllocParamSize for the allocation parameters of a class;
 * embedded_param_copy.c, rmapi_deprecated_control.c and a few handlers for the buffers behind
 * pointer members). The branch is chosen by the rule of the UVM table. */
#include "generated/rm_params.h"

/* No second-level rules for this buffer (plan.rule_kind). */
#define NVTR_NO_RULES 0xffu
/* At most this many second-level buffers per call (an array rule may name up to 64). */
#define NVTR_MAX_POINTEES 8

struct nvtr_buf_plan {
  const char* role; /* "arg", "params", "rights", "xfer"; "params.<member>" (second level) */
  uint64_t addr;
  uint64_t size;
  int bounded;     /* size is an upper bound: read what is readable of it */
  int class_sized; /* RM alloc parameters with paramsSize 0: the size RM gives the class */
  int index;       /* an array rule's element: written into the role's "[]"; -1 otherwise */
  uint32_t rule_kind, rule_key; /* the rules of this parameter buffer (NVTR_RULE_*), or none */
  uint64_t count, elem;         /* second level: the size is count x elem bytes */
  uint32_t ptr_off;             /* second level: offset of the pointer in the parameters */
};

static inline struct nvtr_buf_plan nvtr_plan(const char* role, uint64_t addr, uint64_t size,
                                             int bounded) {
  struct nvtr_buf_plan p;
  memset(&p, 0, sizeof p);
  p.role = role;
  p.addr = addr;
  p.size = size;
  p.bounded = bounded;
  p.index = -1;
  p.rule_kind = NVTR_NO_RULES;
  return p;
}

/* The role as written in the trace: "params.opsBuffer[3].pCpuVA" for element 3 of the rule
 * "params.opsBuffer[].pCpuVA". Writes at most cap - 1 bytes and a NUL; returns the length. */
static inline size_t nvtr_role_format(const struct nvtr_buf_plan* p, char* out, size_t cap) {
  size_t n = 0;
  if (cap == 0) return 0;
  for (const char* r = p->role; *r != '\0' && n + 1 < cap; ++r) {
    out[n++] = *r;
    if (r[0] == '[' && r[1] == ']' && p->index >= 0) {
      char digits[12];
      int k = 0;
      unsigned v = (unsigned)p->index;
      do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
      } while (v != 0 && k < 11);
      while (k > 0 && n + 1 < cap) out[n++] = digits[--k];
    }
  }
  out[n] = '\0';
  return n;
}

/* The RM tables for driver major `major` (0: unknown, the newest branch), by the rule of
 * nvtr_uvm_branch_for_major. */
static inline const struct nvtr_rm_branch* nvtr_rm_branch_for_major(int major) {
  const struct nvtr_rm_branch* best = &nvtr_rm_branches[NVTR_RM_BRANCH_COUNT - 1];
  if (major <= 0) return best;
  long best_d = -1;
  for (int i = 0; i < NVTR_RM_BRANCH_COUNT; ++i) {
    long d = (long)nvtr_rm_branches[i].major - major;
    if (d < 0) d = -d;
    if (best_d < 0 || d <= best_d) {
      best_d = d;
      best = &nvtr_rm_branches[i];
    }
  }
  return best;
}

/* The bytes RM copies from a non-NULL pAllocParms for class `hclass` in branch `b`; 0 when the
 * class takes none or the branch does not know it (RM then refuses the class). */
static inline uint32_t nvtr_class_params_size(const struct nvtr_rm_branch* b, uint32_t hclass) {
  if (b == NULL) return 0;
  uint32_t lo = 0, hi = b->nclasses;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (b->classes[mid].hclass < hclass) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < b->nclasses && b->classes[lo].hclass == hclass ? b->classes[lo].size : 0;
}

/* How to read the ioctl argument itself. size 0: the argument is not read as a buffer (an
 * integer argument, a request without a size, a UVM request without parameters). `uvm`: the UVM
 * size table of the recording (nvtr_uvm_branch_for_major). */
static inline struct nvtr_buf_plan nvtr_plan_arg(int kind, uint32_t req, uint64_t arg,
                                                 const struct nvtr_uvm_branch* uvm) {
  struct nvtr_buf_plan p = nvtr_plan("arg", arg, 0, 0);
  if (kind == NVTR_DEV_UVM) {
    int64_t n = nvtr_uvm_param_size(uvm, req);
    if (n >= 0) {
      p.size = (uint64_t)n;
    } else {
      p.size = NVTR_UVM_BOUNDED_READ;
      p.bounded = 1;
    }
  } else if (NVTR_IOC_DIR(req) != 0 && NVTR_IOC_SIZE(req) != 0) {
    p.size = NVTR_IOC_SIZE(req);
  }
  return p;
}

static inline uint64_t nvtr_load_u64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline uint32_t nvtr_load_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
/* A little-endian unsigned value of 1, 2, 4 or 8 bytes (other sizes read as 0). */
static inline uint64_t nvtr_load_n(const uint8_t* p, uint32_t n) {
  uint8_t b[8] = {0};
  uint64_t v;
  if (n != 1 && n != 2 && n != 4 && n != 8) return 0;
  memcpy(b, p, n);
  memcpy(&v, b, 8);
  return v;
}

/* nvos.h: NVOS54 cmd at 8; NVOS21/NVOS64 hClass at 12. */
#define NVTR_NVOS54_CMD 8u
#define NVTR_NVOS21_HCLASS 12u

/* The `params` of an RM alloc: paramsSize bytes as the caller gives them, or — paramsSize 0 with a
 * pointer, as libcuda 580 passes every alloc — the size RM itself copies for the class
 * (src/nvidia/src/kernel/rmapi/param_copy.c rmapiParamsCopyInit: RM sizes the parameters by the
 * class and ignores paramsSize). */
static inline struct nvtr_buf_plan nvtr_plan_alloc_params(const struct nvtr_rm_branch* rm,
                                                          uint64_t ptr, uint32_t size,
                                                          uint32_t hclass) {
  struct nvtr_buf_plan p = nvtr_plan("params", ptr, size, 0);
  if (size == 0 && ptr != 0) {
    p.size = nvtr_class_params_size(rm, hclass);
    p.class_sized = p.size != 0;
  }
  p.rule_kind = NVTR_RULE_ALLOC;
  p.rule_key = hclass;
  return p;
}

/* Nested buffers of RM escape `nr` whose parameters (`size` bytes, as the request or the XFER
 * wrapper gives it) are `params` (`len` bytes were readable). Fills out[] and returns how many
 * (at most 2). `allow_xfer`: 0 for the parameters an XFER points to (no XFER inside XFER). `rm`:
 * the RM tables of the recording (nvtr_rm_branch_for_major). */
static inline int nvtr_plan_escape(uint32_t nr, uint32_t size, const uint8_t* params, uint64_t len,
                                   int allow_xfer, const struct nvtr_rm_branch* rm,
                                   struct nvtr_buf_plan out[2]) {
  if (len < size) return 0;
  if (nr == NVTR_ESC_RM_CONTROL && size == NVTR_NVOS54_SIZE) {
    out[0] = nvtr_plan("params", nvtr_load_u64(params + NVTR_NVOS54_PARAMS),
                       nvtr_load_u32(params + NVTR_NVOS54_PARAMS_SIZE), 0);
    out[0].rule_kind = NVTR_RULE_CONTROL;
    out[0].rule_key = nvtr_load_u32(params + NVTR_NVOS54_CMD);
    return 1;
  }
  if (nr == NVTR_ESC_RM_ALLOC && size == NVTR_NVOS21_SIZE) {
    out[0] = nvtr_plan_alloc_params(rm, nvtr_load_u64(params + NVTR_NVOS21_ALLOC_PARMS),
                                    nvtr_load_u32(params + NVTR_NVOS21_PARAMS_SIZE),
                                    nvtr_load_u32(params + NVTR_NVOS21_HCLASS));
    return 1;
  }
  if (nr == NVTR_ESC_RM_ALLOC && size == NVTR_NVOS64_SIZE) {
    out[0] = nvtr_plan_alloc_params(rm, nvtr_load_u64(params + NVTR_NVOS64_ALLOC_PARMS),
                                    nvtr_load_u32(params + NVTR_NVOS64_PARAMS_SIZE),
                                    nvtr_load_u32(params + NVTR_NVOS21_HCLASS));
    uint64_t rights = nvtr_load_u64(params + NVTR_NVOS64_RIGHTS);
    if (rights == 0) return 1; /* NULL: no rights requested */
    out[1] = nvtr_plan("rights", rights, NVTR_RS_ACCESS_MASK_SIZE, 0);
    return 2;
  }
  if (allow_xfer && nr == NVTR_ESC_IOCTL_XFER_CMD && size == NVTR_XFER_SIZE) {
    out[0] = nvtr_plan("xfer", nvtr_load_u64(params + NVTR_XFER_PTR),
                       nvtr_load_u32(params + NVTR_XFER_ARG_SIZE), 0);
    return 1;
  }
  return 0;
}

/* Nested buffers named by an ioctl argument read before the call. */
static inline int nvtr_plan_nested(int kind, uint32_t req, const uint8_t* arg, uint64_t len,
                                   const struct nvtr_rm_branch* rm, struct nvtr_buf_plan out[2]) {
  if (kind != NVTR_DEV_RM || NVTR_IOC_TYPE(req) != NVTR_NV_IOCTL_MAGIC) return 0;
  return nvtr_plan_escape(NVTR_IOC_NR(req), NVTR_IOC_SIZE(req), arg, len, 1, rm, out);
}

/* Nested buffers of the parameters an XFER points to: `xfer_arg` is the nv_ioctl_xfer_t (16
 * bytes), `inner` the bytes of its target. */
static inline int nvtr_plan_xfer_inner(const uint8_t* xfer_arg, const uint8_t* inner,
                                       uint64_t inner_len, const struct nvtr_rm_branch* rm,
                                       struct nvtr_buf_plan out[2]) {
  uint32_t cmd = nvtr_load_u32(xfer_arg + NVTR_XFER_CMD) & 0xffu;
  uint32_t size = nvtr_load_u32(xfer_arg + NVTR_XFER_ARG_SIZE);
  return nvtr_plan_escape(cmd, size, inner, inner_len, 0, rm, out);
}

/* ---- the second level: buffers behind pointer members of the parameters ---- */

/* The extent of one pointer of rule `r` whose counts sit at `base` (the structure, or the array
 * element) of `bytes` (len readable; the caller checked that the counts are inside). */
static inline void nvtr_pointee_size(const struct nvtr_ptr_rule* r, const uint8_t* base,
                                     struct nvtr_buf_plan* p) {
  uint64_t count = 1;
  if (r->count != NVTR_NO_MEMBER) count = nvtr_load_n(base + r->count, r->count_size);
  if (r->count2 != NVTR_NO_MEMBER) {
    uint64_t c2 = nvtr_load_n(base + r->count2, r->count_size);
    count = (c2 != 0 && count > UINT64_MAX / c2) ? UINT64_MAX : count * c2;
  }
  p->count = count;
  p->elem = r->elem;
  if (r->flags & NVTR_RULE_BOUNDED) {
    p->size = NVTR_UVM_BOUNDED_READ;
    p->bounded = 1;
  } else if (r->elem != 0 && count > UINT64_MAX / r->elem) {
    p->size = UINT64_MAX; /* more than any cap: recorded as over the cap */
  } else {
    p->size = count * r->elem;
  }
}

/* Whether bytes [off, off + n) lie inside `len` (`len > size - off` style, no overflow). */
static inline int nvtr_inside(uint64_t len, uint64_t off, uint64_t n) {
  return off <= len && n <= len - off;
}

/* The buffers behind the pointer members of parameter buffer `p` (a plan of nvtr_plan_escape),
 * from its bytes read before the call (`bytes`, `len` readable): the rules of its command or
 * class in branch `rm` whose structure the buffer holds whole, with a non-NULL pointer and a
 * non-zero extent (a count member over the recorder's cap gives a plan over the cap: the
 * recorders record it as unreadable and say why). Fills at most `max` plans; returns how many,
 * and in *dropped how many more the rules named. */
static inline int nvtr_plan_pointees(const struct nvtr_rm_branch* rm, const struct nvtr_buf_plan* p,
                                     const uint8_t* bytes, uint64_t len, struct nvtr_buf_plan* out,
                                     int max, int* dropped) {
  int n = 0;
  if (dropped != NULL) *dropped = 0;
  if (rm == NULL || p->rule_kind == NVTR_NO_RULES || bytes == NULL || p->addr == 0) return 0;
  uint32_t lo = 0, hi = rm->nrules;
  while (lo < hi) { /* the first rule of (kind, key) */
    uint32_t mid = lo + (hi - lo) / 2;
    const struct nvtr_ptr_rule* r = &rm->rules[mid];
    if (r->kind < p->rule_kind || (r->kind == p->rule_kind && r->key < p->rule_key)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  for (uint32_t i = lo; i < rm->nrules; ++i) {
    const struct nvtr_ptr_rule* r = &rm->rules[i];
    if (r->kind != p->rule_kind || r->key != p->rule_key) break;
    /* RM copies a control's embedded buffers only when paramsSize is the structure's size. */
    if (len < r->params_size || (r->kind == NVTR_RULE_CONTROL && p->size != r->params_size)) {
      continue;
    }
    /* A copy under a condition: the member equals a value, or one of its bit fields does
     * (cond_mask; all ones for the whole member, which is at most 4 bytes). */
    if (r->cond != NVTR_NO_MEMBER &&
        (!nvtr_inside(len, r->cond, r->cond_size) ||
         (nvtr_load_n(bytes + r->cond, r->cond_size) & r->cond_mask) != r->cond_value)) {
      continue;
    }
    uint64_t elems = 1, stride = 0, first = 0;
    if (r->array != NVTR_NO_MEMBER) {
      if (!nvtr_inside(len, r->array_count, r->array_count_size)) continue;
      elems = nvtr_load_n(bytes + r->array_count, r->array_count_size);
      if (elems > r->array_max) elems = r->array_max;
      stride = r->array_stride;
      first = r->array;
    }
    for (uint64_t e = 0; e < elems; ++e) {
      uint64_t base = first + e * stride;
      uint64_t unit = r->array != NVTR_NO_MEMBER ? stride : r->params_size;
      if (!nvtr_inside(len, base, unit) || !nvtr_inside(unit, r->ptr, 8) ||
          (r->count != NVTR_NO_MEMBER && !nvtr_inside(unit, r->count, r->count_size)) ||
          (r->count2 != NVTR_NO_MEMBER && !nvtr_inside(unit, r->count2, r->count_size))) {
        break;
      }
      uint64_t addr = nvtr_load_u64(bytes + base + r->ptr);
      if (addr == 0) continue; /* NULL: RM copies nothing (a size query) */
      struct nvtr_buf_plan q = nvtr_plan(r->role, addr, 0, 0);
      nvtr_pointee_size(r, bytes + base, &q);
      if (q.size == 0) continue;
      if (r->array != NVTR_NO_MEMBER) q.index = (int)e;
      q.ptr_off = (uint32_t)(base + r->ptr);
      if (n >= max) {
        if (dropped != NULL) ++*dropped;
        continue;
      }
      out[n++] = q;
    }
  }
  return n;
}

#endif /* CUDATOOL_TRACE_NV_IOCTL_ABI_H */
