/*
 * Compute launches in the replay's fake GPU (docs/replay.md, "The fake GPU"): the compute
 * class's methods read as the GPU reads them, and each launch completed without being executed.
 *
 * A launch is a QMD (Queue Meta Data) in GPU memory: SEND_PCAS_A gives its address, then
 * SEND_SIGNALING_PCAS2_B (or _PCAS_B) schedules it (or an inline QMD arrives in the pushbuffer).
 * libcuda 580 writes the QMD, the constant buffer that holds the kernel's parameters and the
 * kernel's code into GPU memory with the class's inline-to-memory methods (LAUNCH_DMA +
 * LOAD_INLINE_DATA), which are carried out here too. A scheduled QMD is decoded (version 03_00
 * of Ampere, Ada and Hopper, 04_00 of Hopper: src/replay/generated/gpu_compute.h, from NVIDIA's
 * open-gpu-doc), reported to the sink (program address, grid, block, shared memory, constant
 * buffers), and completed as the GPU completes it after the work: its release semaphores are
 * written and its dependent QMDs scheduled or their dependence counters decremented. No kernel
 * runs: what the kernel would have written is not written.
 *
 * Plain C for the replay shim, no allocation; memory through fg_mem (GPU virtual addresses: the
 * fake GPU's CPU mappings and video memory), so it is tested on fixtures (tests/unit).
 */
#ifndef CUDATOOL_REPLAY_LAUNCH_H
#define CUDATOOL_REPLAY_LAUNCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GPU memory as the fake GPU sees it. Aligned 4- and 8-byte accesses (semaphores) are atomic. */
struct fg_mem {
  void* ctx;
  uint64_t (*read)(void* ctx, uint64_t va, void* dst, uint64_t n);        /* n; 0: not there */
  uint64_t (*write)(void* ctx, uint64_t va, const void* src, uint64_t n); /* n; 0: not there */
  uint64_t (*now)(void* ctx); /* the timestamp of four-word semaphores (ns) */
};

/* Semaphore reductions (the values of every form: the QMD's, the report semaphores'). */
enum fg_reduction {
  FG_RED_ADD,
  FG_RED_MIN,
  FG_RED_MAX,
  FG_RED_INC,
  FG_RED_DEC,
  FG_RED_AND,
  FG_RED_OR,
  FG_RED_XOR
};

/* One semaphore release. */
struct fg_sem {
  uint64_t va;
  uint64_t payload;
  uint8_t size;      /* bytes of payload: 4 or 8 */
  uint8_t timestamp; /* a four-word structure: the time at va + 8 */
  uint8_t reduce;    /* the payload combined with what the semaphore holds, by `op` */
  uint8_t op;        /* enum fg_reduction */
};
/* Carries out a release: 1, or 0 when the semaphore is in memory the replay cannot see. */
int fg_sem_release(const struct fg_mem* m, const struct fg_sem* s);

#define FG_QMD_MAX 384 /* bytes of the largest QMD read (04_00) */
#define FG_MAX_CB 8
#define FG_MAX_SEMS 3
#define FG_MAX_DEPS 2

enum fg_dep_action { FG_DEP_NONE, FG_DEP_SCHEDULE, FG_DEP_DECREMENT };

/* A QMD, decoded. */
struct fg_launch {
  uint64_t qmd_va;
  uint32_t major, minor; /* QMD version */
  uint32_t null_grid;    /* no CTA to run (04_00's QMD_TYPE GRID_NULL, or an empty grid) */
  uint32_t dependence;   /* DEPENDENCE_COUNTER: decrements it waits for before it runs */
  uint32_t grid[3], block[3];
  uint32_t shared_bytes, registers;
  uint64_t program;  /* the kernel's first instruction */
  uint32_t cb_valid; /* bit i: constant buffer i is given */
  uint64_t cb_va[FG_MAX_CB];
  uint32_t cb_size[FG_MAX_CB];
  uint32_t n_sems;
  struct fg_sem sems[FG_MAX_SEMS]; /* released when the work is done */
  uint32_t n_deps;
  struct {
    uint64_t va;
    uint32_t action; /* enum fg_dep_action */
  } deps[FG_MAX_DEPS];
};

enum fg_qmd_error { FG_QMD_OK = 0, FG_QMD_SHORT = -1, FG_QMD_VERSION = -2 };
/* Decodes the n bytes of a QMD read at va; an FG_QMD_* code. */
int fg_qmd_decode(const uint8_t* q, uint32_t n, uint64_t va, struct fg_launch* out);

/* Why a channel's compute work stopped (fg_compute.stop). */
enum fg_stop {
  FG_STOP_NONE = 0,
  FG_STOP_POLICY = 1,     /* --execute stop: a GPU that never finishes compute work */
  FG_STOP_UNREADABLE = 2, /* the QMD lies in memory the replay cannot see */
  FG_STOP_VERSION = 3,    /* a QMD of a version the replay does not read */
};

#define FG_WAITING 16
#define FG_INLINE_BUF 256

/* The compute engine of one channel. Zero it to start. */
struct fg_compute {
  uint32_t cls;
  /* inline to memory */
  uint64_t i2m_dst;
  uint32_t i2m_line, i2m_count, i2m_pitch, i2m_launch;
  uint32_t i2m_active;
  uint64_t i2m_done; /* dwords of the current transfer received */
  uint64_t i2m_sem;
  uint32_t i2m_payload;
  uint64_t buf_va; /* bytes received, not yet written */
  uint32_t buf_len;
  uint8_t buf[FG_INLINE_BUF];
  /* the launch */
  uint64_t qmd_va;
  uint64_t inline_shifted; /* SET_INLINE_QMD_ADDRESS: the address >> 8 */
  uint32_t inline_bytes;
  uint8_t inline_qmd[FG_QMD_MAX];
  struct {
    uint64_t va;
    uint32_t left;
  } waiting[FG_WAITING]; /* QMDs scheduled with a dependence counter still above 0 */
  uint32_t n_waiting;
  /* report semaphores: SET_REPORT_SEMAPHORE_A..C, and the address/payload of _EXECUTE */
  uint64_t rep_va;
  uint32_t rep_payload;
  uint64_t exe_va, exe_payload;
  /* an acquire not met (FG_RETRY), and a stop (FG_STOP) */
  uint64_t acq_va, acq_want, acq_value;
  uint32_t stop; /* enum fg_stop */
  uint64_t stop_qmd;
};

struct fg_stats {
  uint64_t launches;     /* kernels completed without execution */
  uint64_t null_grids;   /* QMDs without CTAs (completion and dependency nodes) */
  uint64_t releases;     /* semaphores released */
  uint64_t lost;         /* releases and writes to memory the replay cannot see */
  uint64_t i2m_bytes;    /* written by inline-to-memory */
  uint64_t deps_unread;  /* dependent QMDs that could not be read or decoded */
  uint64_t block_linear; /* inline-to-memory bytes to block-linear surfaces: not laid out */
};

/* What the fake GPU does with a launch: called once per kernel QMD completed, before its
 * releases (the constant buffers and the code are still as the launch saw them). */
struct fg_sink {
  void* ctx;
  void (*launch)(void* ctx, const struct fg_compute* c, const struct fg_launch* l);
};

struct fg_env {
  const struct fg_mem* mem;
  const struct fg_sink* sink; /* may be NULL */
  struct fg_stats* stats;
  int complete; /* 1: complete launches (--execute none); 0: stop at each (--execute stop) */
};

enum { FG_DONE = 0, FG_RETRY = 1, FG_STOP = 2 };
/* One method of a compute class (cls: its class id, for the methods only Ada and Hopper have):
 * FG_DONE; FG_RETRY when an acquire is not met yet (call again with the same method later);
 * FG_STOP when a launch cannot be completed (c->stop says why). */
int fg_compute_method(struct fg_compute* c, const struct fg_env* e, uint32_t method,
                      uint32_t value);

/* Whether `method` of a compute class schedules a QMD with `value` (a launch). */
int fg_is_launch(uint32_t method, uint32_t value);

#ifdef __cplusplus
}
#endif

#endif /* CUDATOOL_REPLAY_LAUNCH_H */
