/*
 * The copy engine of the replay's fake GPU (docs/replay.md, "The fake GPU"): the methods of the
 * copy classes (…B5: Ampere's C6B5, Hopper's C8B5; layouts in generated/gpu_methods.h) as the
 * engine carries them out. LAUNCH_DMA copies LINE_LENGTH_IN bytes (LINE_COUNT lines, each PITCH
 * apart, when MULTI_LINE_ENABLE) from OFFSET_IN to OFFSET_OUT, or, with REMAP_ENABLE and the
 * remap's destination CONST_A, fills them with SET_REMAP_CONST_A; then releases the semaphore
 * it names (one word or four, IADD and INC reductions). Only virtual addresses are read (physical
 * and pitch/block-linear layouts other than pitch are left as they are).
 *
 * Plain C for the replay shim, no allocation; memory through fg_mem (launch.h), so that a copy
 * into video memory and back is tested on fixtures (tests/unit/replay_launch_test.cpp).
 */
#ifndef CUDATOOL_REPLAY_COPY_ENGINE_H
#define CUDATOOL_REPLAY_COPY_ENGINE_H

#include <stdint.h>

#include "launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The copy engine's state in one channel. Zero it to start. */
struct fg_copy {
  uint64_t sem, in, out;
  uint32_t payload, line, count, pitch_in, pitch_out, const_a, remap;
};

/* What the copy engines did, for the report and tests. */
struct fg_copy_stats {
  uint64_t copies, fills; /* LAUNCH_DMA transfers carried out */
  uint64_t bytes;         /* bytes copied or filled */
  uint64_t short_bytes;   /* bytes of transfers memory the replay cannot see cut short */
  uint64_t releases;      /* semaphores released */
};

/* One method of a copy class. */
void fg_copy_method(struct fg_copy* c, const struct fg_mem* m, struct fg_copy_stats* st,
                    uint32_t method, uint32_t value);

#ifdef __cplusplus
}
#endif

#endif /* CUDATOOL_REPLAY_COPY_ENGINE_H */
