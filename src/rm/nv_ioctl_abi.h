/*
 * What the recorders need of the NVIDIA kernel-driver ioctl ABI to read argument buffers: the
 * request encoding, the escape numbers, and where the pointers to nested parameter buffers sit.
 * Plain C, shared by the ptrace recorder (C++) and the preload shim (C), so that both read the
 * same bytes. Values are written from NVIDIA's open-gpu-kernel-modules headers, cited per item
 * (paths in that repository); decoding the contents is the decoder's job (src/rm/).
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

struct nvtr_buf_plan {
  const char* role; /* "arg", "params", "rights", "xfer" */
  uint64_t addr;
  uint64_t size;
  int bounded; /* size is an upper bound: read what is readable of it */
};

/* How to read the ioctl argument itself. size 0: the argument is not read as a buffer (an
 * integer argument, a request without a size, a UVM request without parameters). `uvm`: the UVM
 * size table of the recording (nvtr_uvm_branch_for_major). */
static inline struct nvtr_buf_plan nvtr_plan_arg(int kind, uint32_t req, uint64_t arg,
                                                 const struct nvtr_uvm_branch* uvm) {
  struct nvtr_buf_plan p = {"arg", arg, 0, 0};
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

/* Nested buffers of RM escape `nr` whose parameters (`size` bytes, as the request or the XFER
 * wrapper gives it) are `params` (`len` bytes were readable). Fills out[] and returns how many
 * (at most 2). `allow_xfer`: 0 for the parameters an XFER points to (no XFER inside XFER). */
static inline int nvtr_plan_escape(uint32_t nr, uint32_t size, const uint8_t* params, uint64_t len,
                                   int allow_xfer, struct nvtr_buf_plan out[2]) {
  if (len < size) return 0;
  if (nr == NVTR_ESC_RM_CONTROL && size == NVTR_NVOS54_SIZE) {
    struct nvtr_buf_plan p = {"params", nvtr_load_u64(params + NVTR_NVOS54_PARAMS),
                              nvtr_load_u32(params + NVTR_NVOS54_PARAMS_SIZE), 0};
    out[0] = p;
    return 1;
  }
  if (nr == NVTR_ESC_RM_ALLOC && size == NVTR_NVOS21_SIZE) {
    struct nvtr_buf_plan p = {"params", nvtr_load_u64(params + NVTR_NVOS21_ALLOC_PARMS),
                              nvtr_load_u32(params + NVTR_NVOS21_PARAMS_SIZE), 0};
    out[0] = p;
    return 1;
  }
  if (nr == NVTR_ESC_RM_ALLOC && size == NVTR_NVOS64_SIZE) {
    struct nvtr_buf_plan p = {"params", nvtr_load_u64(params + NVTR_NVOS64_ALLOC_PARMS),
                              nvtr_load_u32(params + NVTR_NVOS64_PARAMS_SIZE), 0};
    out[0] = p;
    uint64_t rights = nvtr_load_u64(params + NVTR_NVOS64_RIGHTS);
    if (rights == 0) return 1; /* NULL: no rights requested */
    struct nvtr_buf_plan q = {"rights", rights, NVTR_RS_ACCESS_MASK_SIZE, 0};
    out[1] = q;
    return 2;
  }
  if (allow_xfer && nr == NVTR_ESC_IOCTL_XFER_CMD && size == NVTR_XFER_SIZE) {
    struct nvtr_buf_plan p = {"xfer", nvtr_load_u64(params + NVTR_XFER_PTR),
                              nvtr_load_u32(params + NVTR_XFER_ARG_SIZE), 0};
    out[0] = p;
    return 1;
  }
  return 0;
}

/* Nested buffers named by an ioctl argument read before the call. */
static inline int nvtr_plan_nested(int kind, uint32_t req, const uint8_t* arg, uint64_t len,
                                   struct nvtr_buf_plan out[2]) {
  if (kind != NVTR_DEV_RM || NVTR_IOC_TYPE(req) != NVTR_NV_IOCTL_MAGIC) return 0;
  return nvtr_plan_escape(NVTR_IOC_NR(req), NVTR_IOC_SIZE(req), arg, len, 1, out);
}

/* Nested buffers of the parameters an XFER points to: `xfer_arg` is the nv_ioctl_xfer_t (16
 * bytes), `inner` the bytes of its target. */
static inline int nvtr_plan_xfer_inner(const uint8_t* xfer_arg, const uint8_t* inner,
                                       uint64_t inner_len, struct nvtr_buf_plan out[2]) {
  uint32_t cmd = nvtr_load_u32(xfer_arg + NVTR_XFER_CMD) & 0xffu;
  uint32_t size = nvtr_load_u32(xfer_arg + NVTR_XFER_ARG_SIZE);
  return nvtr_plan_escape(cmd, size, inner, inner_len, 0, out);
}

#endif /* CUDATOOL_TRACE_NV_IOCTL_ABI_H */
