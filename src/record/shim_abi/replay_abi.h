/*
 * The files shared by `cudatool replay` (C++, src/replay/) and the replay shim
 * (libcudatool_replay.so, src/replay/shim/, plain C inside the replayed program):
 *
 *   answer table  written by cudatool before the run, mapped read-only by every shim: the
 *                 recorded calls (their identity and the bytes the kernel changed), grouped by
 *                 thread role and by identity, the device paths, the per-escape and per-UVM-call
 *                 layouts the shim needs to read a live call's identity, and the environment;
 *   shared state  a MAP_SHARED file of every shim of the run (forked children, exec'd images):
 *                 which recorded calls were answered, which thread holds which role, the device
 *                 fds of each process, progress, the fake GPU's findings;
 *   log           the replayed calls, one record each, appended by the shims; cudatool turns it
 *                 into the report and the replayed trace (-o).
 *
 * All integers little-endian (x86-64 only, as the shim). Offsets are from the start of the file.
 * cudatool checks nothing it reads back blindly: the log is parsed through ByteView (a program
 * can scribble over a shared mapping).
 *
 * Version rule. One cudatool makes the three files for one run, and the shim it starts checks
 * them when it starts (src/replay/shim/replay_init.c): the three magics, RP_VERSION in the table,
 * and the sizes; on any mismatch it stays off. The state and the log carry no version of their
 * own: they share the table's. Bump RP_VERSION when any structure below changes layout (a member
 * added, moved, resized or removed, in the table, the state or the log), when a member, flag or
 * enum value changes meaning or number, when an environment variable below changes, or when
 * rp_ident_hash, rp_input_digest or rp_mix change (cudatool and the shim must compute them
 * alike: the table's buckets are placed by them). Say in the comment of RP_VERSION what the bump
 * was for. Change a magic only when a file changes what it is.
 */
#ifndef CUDATOOL_SHIM_ABI_REPLAY_ABI_H
#define CUDATOOL_SHIM_ABI_REPLAY_ABI_H

#include <stdint.h>
#include <string.h>

#define RP_TABLE_MAGIC 0x3174627470726475ULL /* "udrptbt1" */
#define RP_STATE_MAGIC 0x3174737470726475ULL /* "udrptst1" */
#define RP_LOG_MAGIC 0x31676c7470726475ULL   /* "udrptlg1" */
/* 2: rp_gpu_layout.map_fd, rp_state.gpu_maps*; 3: rp_state.channels; 4: rp_state.compute and
 * .vidmem, RP_CH_COMPUTE, RP_LOG_LAUNCH, RP_LOG_IMAGE */
#define RP_VERSION 4

/* Environment of the replayed program (set by cudatool). */
#define RP_ENV_TABLE "CUDATOOL_REPLAY_TABLE" /* the answer table */
#define RP_ENV_STATE "CUDATOOL_REPLAY_STATE" /* the shared state */
#define RP_ENV_LOG "CUDATOOL_REPLAY_LOG"     /* the log */
#define RP_ENV_ROOT "CUDATOOL_REPLAY_ROOT"   /* the private environment tree */
/* "stop": the fake GPU stops at each compute launch (--execute stop); else it completes them */
#define RP_ENV_EXECUTE "CUDATOOL_REPLAY_EXECUTE"

/* ---- identity of a call: what the matcher compares (docs/replay.md, "Matching") ---- */
enum rp_sys { RP_SYS_NONE = 0, RP_OPEN, RP_CLOSE, RP_DUP, RP_IOCTL, RP_MMAP, RP_MUNMAP };

/* The same fields ab's normalisation keys a call by (ab/normalize.cpp: system call, device,
 * request, escape or UVM number, control command; plus the class of an allocation) and the
 * objects it names, as the recorded handle values: libcuda picks object handles and the kernel
 * (here: the answer) picks client handles, so an unchanged program names the recorded handles;
 * a live handle that differs is translated through the handle map (bound when its creation was
 * answered), which is ab's naming of objects by creation. */
struct rp_ident {
  uint32_t sys;      /* enum rp_sys */
  uint32_t path;     /* device path index */
  uint32_t req;      /* ioctl request (32 bits) */
  uint32_t nr;       /* escape number (an XFER: the escape inside), UVM number */
  uint32_t cmd;      /* RM control command, 0 none */
  uint32_t cls;      /* RM alloc class, 0 none */
  uint32_t h_client; /* client handle, 0 none */
  uint32_t h_obj;    /* control: hObject; alloc: the parent; free: the object; else 0 */
};

static inline uint64_t rp_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

static inline uint64_t rp_ident_hash(const struct rp_ident* id, uint32_t role) {
  uint64_t h = rp_mix(0x6372706c61790000ULL, role);
  h = rp_mix(h, id->sys | ((uint64_t)id->path << 32));
  h = rp_mix(h, id->req | ((uint64_t)id->nr << 32));
  h = rp_mix(h, id->cmd | ((uint64_t)id->cls << 32));
  h = rp_mix(h, id->h_client | ((uint64_t)id->h_obj << 32));
  return h;
}

static inline int rp_ident_eq(const struct rp_ident* a, const struct rp_ident* b) {
  return a->sys == b->sys && a->path == b->path && a->req == b->req && a->nr == b->nr &&
         a->cmd == b->cmd && a->cls == b->cls && a->h_client == b->h_client && a->h_obj == b->h_obj;
}

/* A digest of a call's inputs (the parameters an RM escape points to, a UVM call's argument) as
 * the program wrote them, for telling apart calls of one identity that only their inputs
 * distinguish (two threads making the same control with different parameters): the first
 * RP_DIGEST_MAX bytes, each aligned 8-byte word that is a user address (2^32 up to 2^47: heap,
 * stack, mappings; they differ between runs) taken as 0. 0: no inputs. */
#define RP_DIGEST_MAX 256u
static inline uint32_t rp_input_digest(const uint8_t* p, uint64_t n) {
  if (p == 0 || n == 0) return 0;
  if (n > RP_DIGEST_MAX) n = RP_DIGEST_MAX;
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (uint64_t i = 0; i < n; i += 8) { /* a word at a time: about 1 ns per word */
    uint64_t k = n - i < 8 ? n - i : 8, w = 0;
    if (k == 8) {
      memcpy(&w, p + i, 8); /* little-endian, as everything here */
      if (w >= (1ull << 32) && w < (1ull << 47)) w = 0;
    } else {
      for (uint64_t b = 0; b < k; ++b) w |= (uint64_t)p[i + b] << (8 * b);
    }
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  return (uint32_t)(h ^ (h >> 32)) | 1u;
}

/* ---- answer table ---- */

/* Which buffer of a live call an answer's bytes go to. */
enum rp_buf {
  RP_BUF_ARG = 0,     /* the ioctl argument */
  RP_BUF_PARAMS = 1,  /* NVOS54 params / NVOS21, NVOS64 pAllocParms */
  RP_BUF_RIGHTS = 2,  /* NVOS64 pRightsRequested */
  RP_BUF_XFER = 3,    /* nv_ioctl_xfer_t target */
  RP_BUF_XPARAMS = 4, /* params of the escape an XFER wraps */
  RP_BUF_MEMBER = 5,  /* behind a pointer member of another buffer (role "params.<member>") */
  RP_BUF_COUNT
};

/* The bytes the kernel changed in one buffer: written over the live buffer at `off`. */
struct rp_patch {
  uint8_t buf;    /* enum rp_buf */
  uint8_t parent; /* RP_BUF_MEMBER: the buffer that holds the pointer */
  uint16_t pad;
  uint32_t ptr_off; /* RP_BUF_MEMBER: offset of the 8-byte pointer in `parent` */
  uint32_t off;
  uint32_t len;
  uint64_t data;    /* offset of `len` bytes in the blob */
  uint32_t bufsize; /* RP_BUF_MEMBER: the buffer's recorded size (what the log reads) */
  uint32_t pad2;
};

/* rp_event.flags */
#define RP_EVF_INJECTED 1u    /* --inject changed this answer */
#define RP_EVF_SYNTHESIZED 2u /* the answer holds bytes the recording lacked (docs/replay.md) */
#define RP_EVF_CREATES 4u     /* creates the object h_new (alloc) */
#define RP_EVF_FREES 8u       /* frees the object h_obj */
#define RP_EVF_CONTROL 16u    /* an RM control: unrecorded repeats get the nearest twin */
#define RP_EVF_CHANNEL 32u    /* allocates a GPFIFO channel (the fake GPU follows it) */
#define RP_EVF_MAPS 64u       /* NV_ESC_RM_MAP_MEMORY: the next mmap of its fd maps h_obj */

struct rp_event {
  struct rp_ident id;
  uint64_t seq; /* in the recording */
  int64_t ret;
  int32_t err;
  uint32_t role;
  uint32_t patch_first;
  uint32_t patch_count;
  uint32_t h_new;     /* alloc: the recorded hObjectNew */
  uint32_t flags;     /* RP_EVF_* */
  uint32_t index;     /* position in the recording (0-based event index) */
  uint32_t in_digest; /* rp_input_digest of the recorded inputs; 0: none */
};

struct rp_role {
  uint32_t first; /* into the event array: a role's events are consecutive, in order */
  uint32_t count;
  int32_t tid; /* in the recording */
  int32_t pid;
};

/* One bucket of the identity index: the events of one (role, identity), in order. */
struct rp_bucket {
  uint64_t hash; /* rp_ident_hash; 0: empty */
  uint32_t role;
  uint32_t list; /* into the list array (event indices) */
  uint32_t count;
  uint32_t pad;
};

/* How to read the identity of a live RM escape whose argument has `size` bytes (an XFER: of the
 * escape inside it). Offsets -1 when the structure has no such member. From the driver branch's
 * tables, by the members and flags of the call's row (src/rm/call_semantics.cpp), which ab's
 * normalisation reads too. The RP_ESCF_* and RP_UVMF_* flags are the rows' kCall* bits. */
#define RP_ESCF_CREATES 1u  /* NVOS21/NVOS64/NVOS02/NVOS05/NVOS55: creates `new` */
#define RP_ESCF_FREES 2u    /* NVOS00: frees `object` */
#define RP_ESCF_FREELIKE 4u /* unrecorded: succeeds (frees, unmaps, event frees) */
#define RP_ESCF_CONTROL 8u  /* NV_ESC_RM_CONTROL */
#define RP_ESCF_MAP 16u     /* NV_ESC_RM_MAP_MEMORY */
#define RP_ESCF_MAP_DMA 32u /* NV_ESC_RM_MAP_MEMORY_DMA */
#define RP_ESCF_ALLOC 64u   /* NV_ESC_RM_ALLOC */
struct rp_escape {
  uint32_t nr;
  uint32_t size;
  int16_t client_off, object_off, new_off, class_off, cmd_off, status_off;
  uint32_t flags;
};

#define RP_UVMF_FREELIKE 1u
#define RP_UVMF_MAP_EXTERNAL 2u /* UVM_MAP_EXTERNAL_ALLOCATION: base/length/hMemory */
struct rp_uvm {
  uint32_t nr;
  int32_t size;       /* UVM_*_PARAMS size, -1 unknown */
  int32_t status_off; /* rmStatus, -1 none */
  uint32_t flags;
};

/* The fake GPU's layouts (from NVIDIA's headers; src/replay/generated/gpu_layouts.h). */
struct rp_gpu_layout {
  int32_t chan_gpfifo_offset;  /* NV_CHANNEL_ALLOC_PARAMS.gpFifoOffset (NvU64) */
  int32_t chan_gpfifo_entries; /* .gpFifoEntries (NvU32) */
  int32_t chan_userd_memory;   /* .hUserdMemory[0] */
  int32_t chan_userd_offset;   /* .userdOffset[0] (NvU64) */
  int32_t chan_params_size;
  int32_t map_ext_base;   /* UVM_MAP_EXTERNAL_ALLOCATION_PARAMS.base */
  int32_t map_ext_length; /* .length */
  int32_t map_ext_offset; /* .offset */
  int32_t map_ext_hmemory;
  int32_t map_ext_hclient;
  int32_t dma_hmemory; /* NVOS46_PARAMETERS.hMemory */
  int32_t dma_offset;  /* .offset */
  int32_t dma_length;  /* .length */
  int32_t dma_dma_offset;
  int32_t map_hmemory; /* NVOS33_PARAMETERS.hMemory (in the *_with_fd argument) */
  int32_t map_offset;
  int32_t map_length;
  int32_t map_linear; /* .pLinearAddress */
  int32_t map_fd;     /* nv_ioctl_nvos33_parameters_with_fd.fd: the fd the mmap that follows uses */
};

/* An environment file or node of the private tree, or a device node answered by stat. */
#define RP_ENV_DEVICE 1u /* a character device: stat answers mode/rdev */
struct rp_env {
  uint32_t path; /* string offset */
  uint32_t flags;
  uint32_t mode;
  uint32_t pad;
  uint64_t rdev;
};

#define RP_TABLEF_DEVICE_ALIASES 1u /* /dev/char/195:N names /dev/nvidia* */

struct rp_table {
  uint64_t magic;
  uint32_t version;
  uint32_t flags;
  uint64_t size;
  uint32_t n_events, n_roles, n_buckets, n_lists;
  uint32_t n_patches, n_paths, n_escapes, n_uvm;
  uint32_t n_env, n_classes, pad0, pad1;
  uint64_t off_events, off_roles, off_buckets, off_lists;
  uint64_t off_patches, off_blob, off_paths, off_escapes;
  uint64_t off_uvm, off_env, off_strings, off_classes;
  uint64_t blob_size, strings_size;
  int32_t driver_major;
  uint32_t channel_class_count; /* the first entries of the class list are GPFIFO classes */
  struct rp_gpu_layout gpu;
  /* strings (NUL-terminated, offsets into the string area) */
  uint32_t root;      /* the private environment tree */
  uint32_t env_globs; /* comma-separated globs of the paths redirected into it */
  uint32_t devices;   /* comma-separated globs of device paths (the recording's --devices) */
  uint32_t driver;    /* the recording's driver version ("" unknown) */
};

/* off_paths: n_paths uint32 string offsets. off_classes: n_classes {uint32 class, int32 size}
 * (allocation parameter sizes, for the classes the fake GPU reads). */
struct rp_class_size {
  uint32_t cls;
  int32_t size;
};

/* ---- shared state ---- */
#define RP_MAX_ROLES 256
#define RP_MAX_FDS 1024
#define RP_MAX_WAITS 64

struct rp_role_state {
  int32_t owner_tid; /* 0: free (atomic) */
  int32_t owner_pid;
  uint32_t hint; /* in-role position after the last in-order answer */
  uint32_t pad;
};

/* A device fd of some process, so that an exec'd image knows its inherited device fds. */
struct rp_fd_entry {
  int32_t pid; /* 0: free */
  int32_t fd;
  int32_t path;
  int32_t cloexec;
};

/* A semaphore the fake GPU could not release: the work before it needs real execution. */
struct rp_wait {
  uint64_t gpu_va;
  uint64_t payload;
  uint32_t channel_handle;
  uint32_t engine_class;
  uint32_t method;
  uint32_t pad;
};

/* What one channel of the fake GPU has left undone (its thread writes it after each pass). */
#define RP_MAX_CHANNELS 64
enum rp_channel_stop {
  RP_CH_IDLE = 0,     /* every GPFIFO entry up to GPPut carried out */
  RP_CH_ACQUIRE = 1,  /* held at a semaphore acquire that is not met */
  RP_CH_LAUNCH = 2,   /* stopped at a compute launch (real work) */
  RP_CH_UNMAPPED = 3, /* the next entry's pushbuffer lies in memory the replay cannot see */
  RP_CH_COMPUTE = 4,  /* held at a compute-class acquire (REPORT_SEMAPHORE_EXECUTE) not met */
};
struct rp_channel_state {
  uint32_t handle; /* 0: slot unused */
  uint32_t cls;
  uint32_t stop;     /* enum rp_channel_stop */
  uint32_t pending;  /* GPFIFO entries not carried out (GPPut - GPGet) */
  uint32_t launches; /* compute launches scheduled (SEND_SIGNALING_PCAS*_B) in that work */
  uint32_t acq_op;   /* RP_CH_ACQUIRE: the SEM_EXECUTE operation */
  uint64_t sem_va;   /* RP_CH_ACQUIRE: the semaphore, the value awaited, the value it holds */
  uint64_t want;
  uint64_t value;
};

/* Compute launches completed without execution (src/replay/shim/launch.h: fg_stats). */
struct rp_compute_stats {
  uint64_t launches;     /* kernel QMDs completed (their releases carried out) */
  uint64_t null_grids;   /* QMDs without CTAs (completion and dependency nodes) */
  uint64_t releases;     /* QMD, report and inline-to-memory semaphores released */
  uint64_t lost;         /* releases and writes to memory the replay cannot see */
  uint64_t i2m_bytes;    /* written by inline-to-memory (code, constant buffers, QMDs) */
  uint64_t deps_unread;  /* dependent QMDs that could not be read or decoded */
  uint64_t block_linear; /* inline-to-memory bytes to block-linear surfaces: not laid out */
  uint64_t stopped;      /* launches the fake GPU stopped at (unreadable QMD, --execute stop) */
};

/* Video memory (src/replay/shim/vidmem.h). */
struct rp_vidmem_stats {
  uint64_t cap_bytes;      /* the most backing the replay makes */
  uint64_t backed_bytes;   /* made so far (64 KiB chunks written to) */
  uint64_t ranges;         /* GPU ranges backed */
  uint64_t dropped_bytes;  /* written past the cap: not kept */
  uint64_t dropped_writes; /* writes that lost bytes to the cap */
  uint64_t ranges_refused; /* ranges past the range table's size */
};

struct rp_state {
  uint64_t magic;
  uint64_t progress;       /* bumped by every answered call and fake-GPU step (atomic) */
  uint64_t seq;            /* next log sequence number (atomic) */
  uint64_t processes;      /* shims started (atomic) */
  uint64_t gpu_entries;    /* GPFIFO entries the fake GPU carried out (atomic) */
  uint64_t gpu_releases;   /* semaphore releases carried out (atomic) */
  uint64_t gpu_maps;       /* mmaps of RM device fds (not UVM) the replay handed out (atomic) */
  uint64_t gpu_maps_known; /* of them, those the fake GPU tied to a memory object (atomic) */
  uint32_t n_waits;        /* (atomic) */
  uint32_t lock;           /* spin lock of fds[] and roles' assignment */
  uint32_t n_events;
  uint32_t pad;
  struct rp_role_state roles[RP_MAX_ROLES];
  struct rp_fd_entry fds[RP_MAX_FDS];
  struct rp_wait waits[RP_MAX_WAITS];
  uint64_t gpu_launches; /* compute launches the fake GPU came to (atomic) */
  uint32_t n_channels;   /* (atomic) */
  uint32_t pad2;
  struct rp_channel_state channels[RP_MAX_CHANNELS];
  struct rp_compute_stats compute; /* the compute engines of all channels (fake GPU's lock) */
  struct rp_vidmem_stats vidmem;   /* video memory backed by the replay (fake GPU's lock) */
  /* then: n_events bytes, 1 when that recorded event was answered */
};

/* ---- log ---- */
enum rp_outcome {
  RP_OUT_ANSWERED = 1,  /* by the next recorded call of its identity, in order */
  RP_OUT_OUT_OF_ORDER,  /* by a recorded call before the thread's position */
  RP_OUT_FREELIKE,      /* unrecorded free/unmap/close: succeeded */
  RP_OUT_TWIN,          /* unrecorded control: the nearest recorded twin's answer */
  RP_OUT_NOT_SUPPORTED, /* unrecorded: NV_ERR_NOT_SUPPORTED (or EOPNOTSUPP without a status) */
  RP_OUT_NO_DEVICE,     /* open of a device path the recording never opened: ENOENT */
  RP_OUT_PASSED,        /* unrecorded open/mmap/munmap/dup of a replay device: carried out */
  RP_OUT_ENV,           /* an environment call, answered from the private tree */
};

/* rp_log_buf.pad: read with a bound of pad2 bytes (no size known) */
#define RP_LOG_BUF_BOUNDED 1u
/* rp_log_buf.pad: not read, its size (pad2 bytes) being over NVTR_MAX_BUFFER, as the recorders
 * leave such a buffer */
#define RP_LOG_BUF_OVER_CAP 2u
/* rp_log_buf.pad: RM alloc parameters passed with paramsSize 0, read with the size RM gives the
 * class (a trace's "sized_by": "class") */
#define RP_LOG_BUF_CLASS_SIZED 4u
struct rp_log_buf {
  uint16_t role; /* enum rp_buf, or 0xffff for a member buffer (ptr_off gives the pointer) */
  uint16_t pad;  /* RP_LOG_BUF_* */
  uint32_t ptr_off;
  uint64_t addr;
  uint32_t size;     /* bytes read */
  uint32_t pre_len;  /* bytes of pre (0 unreadable) */
  uint32_t post_len; /* bytes of post */
  uint32_t pad2;
  /* then pre_len + post_len bytes, padded to 8 */
};

struct rp_log_rec {
  uint32_t size; /* of the record, payload included, multiple of 8 */
  uint32_t sys;  /* enum rp_sys, or RP_LOG_* below */
  uint64_t seq;  /* order of the replayed calls */
  uint64_t t_ns; /* CLOCK_MONOTONIC */
  uint64_t dur_ns;
  int32_t pid, tid;
  int32_t fd;
  int32_t path; /* device path index, -1 */
  uint32_t req;
  uint32_t outcome; /* enum rp_outcome */
  int64_t ret;
  int32_t err;
  int32_t answered;                     /* event index in the answer table, -1 */
  uint64_t addr, len, prot, flags, off; /* mmap / munmap; open: flags */
  int32_t child;                        /* fork */
  uint32_t nbufs;
  /* then nbufs rp_log_buf, each followed by its bytes; a path string for env records */
};

#define RP_LOG_FORK 100    /* a process forked (child in `child`) */
#define RP_LOG_EXEC 101    /* a shim started in a new program image */
#define RP_LOG_ENV 102     /* an environment call: path string follows, ret/err, `req` = op */
#define RP_LOG_REFUSED 103 /* the program loaded another driver's libcuda: message follows */
#define RP_LOG_LAUNCH 104  /* a launch completed, not executed: rp_log_launch follows */
#define RP_LOG_IMAGE 105   /* the program opened a CUDA image file (cubin, fatbin): its path */

/* RP_LOG_LAUNCH's payload (nbufs 0): the launch as its QMD gives it, then code_len bytes of the
 * kernel's code at `program` and cb0_len bytes of constant buffer 0 (the kernel's parameters),
 * as the fake GPU read them (fewer than asked where the memory ends). */
#define RP_LAUNCH_CODE 128 /* bytes of code logged: enough to tell kernels apart */
#define RP_LAUNCH_CB0 4096 /* bytes of c[0] logged (parameters from 0x210 on Hopper) */
struct rp_log_launch {
  uint32_t channel; /* the channel's handle */
  uint32_t cls;     /* the compute class */
  uint64_t qmd_va;
  uint64_t program;
  uint32_t grid[3], block[3];
  uint32_t shared_bytes, registers;
  uint32_t qmd_major, qmd_minor;
  uint64_t cb0_va;
  uint32_t cb0_size; /* as the QMD gives it */
  uint32_t code_len, cb0_len;
  uint32_t pad;
};

struct rp_log_head {
  uint64_t magic;
  uint64_t write_off; /* next free byte (atomic) */
  uint64_t capacity;  /* file size */
  uint64_t lost;      /* records that did not fit (atomic) */
};

#endif /* CUDATOOL_SHIM_ABI_REPLAY_ABI_H */
