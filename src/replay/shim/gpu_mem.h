/*
 * The fake GPU's memory (docs/replay.md, "The fake GPU"): one view of GPU virtual addresses over
 * what the replay can see and what it backs itself.
 *
 *   CPU-visible memory  the replay hands out every device mapping, so it knows which memory
 *                       object each CPU mapping shows (NV_ESC_RM_MAP_MEMORY's pLinearAddress is
 *                       the offset of the mmap that follows) and, from the answered
 *                       NV_ESC_RM_MAP_MEMORY_DMA and UVM_MAP_EXTERNAL_ALLOCATION calls, which
 *                       memory object each GPU range shows; a GPU address inside a CPU mapping
 *                       the replay made (UVM ranges) is that address;
 *   video memory        a GPU range whose object no CPU mapping shows is backed by the replay
 *                       (vidmem.h: sparse, lazy, capped), so that copies, fills, inline-to-memory
 *                       writes, QMDs and semaphores there are carried out and read back.
 *
 * Part of the replay shim (replay_shim.h gives the order of its files): called by fake_gpu.c and
 * the behaviour; calls only vidmem.c and the shim runtime. The lock is the fake GPU's: the
 * channel thread holds it while it reads the mappings; gm_* below expect it held.
 */
#ifndef CUDATOOL_REPLAY_GPU_MEM_H
#define CUDATOOL_REPLAY_GPU_MEM_H

#include <stdint.h>

#include "launch.h"
#include "replay_shim.h"

#define GM_VIDMEM_CAP ((uint64_t)4 << 30) /* the most video memory the replay backs */

RS_HIDDEN void gm_lock(void);
RS_HIDDEN void gm_unlock(void);

/* The CPU address of memory object h at offset x, n bytes; 0 when no CPU mapping shows it. */
RS_HIDDEN uint64_t gm_object_cpu(uint32_t h, uint64_t x, uint64_t n);
/* The CPU address of GPU address va, n bytes; 0 when no CPU mapping shows it. */
RS_HIDDEN uint64_t gm_cpu(uint64_t va, uint64_t n);
/* Bytes at va, from a CPU mapping or video memory: n, or 0 when neither holds all of them. */
RS_HIDDEN uint64_t gm_read(uint64_t va, void* dst, uint64_t n);
RS_HIDDEN uint64_t gm_write(uint64_t va, const void* src, uint64_t n);
/* Where the n bytes at va can be read and written in place (semaphores); NULL when nowhere. */
RS_HIDDEN void* gm_span(uint64_t va, uint64_t n);
/* The fake GPU's memory as launch.c and copy_engine.c read it (struct fg_mem). */
RS_HIDDEN const struct fg_mem* gm_fg_mem(void);
/* A memory object freed: its GPU ranges and their video memory go. */
RS_HIDDEN void gm_free(uint32_t h);
/* What video memory was made, for the report. */
RS_HIDDEN void gm_publish(struct rp_vidmem_stats* out);
RS_HIDDEN void gm_atfork_child(void);

#endif /* CUDATOOL_REPLAY_GPU_MEM_H */
