/* The fake GPU's copy engine (copy_engine.h). Layouts: generated/gpu_methods.h. */
#include "copy_engine.h"

#include <string.h>

#include "../generated/gpu_methods.h"

#define FIELD(v, name) (((v) >> name##_LO) & ((1ull << (name##_HI - name##_LO + 1)) - 1))
#define PIECE 4096 /* bytes moved at once: the engine runs on the fake GPU's thread's stack */

/* Copies n bytes from src to dst (GPU addresses) in pieces, as memmove: the bytes copied. */
static uint64_t copy_bytes(const struct fg_mem* m, uint64_t dst, uint64_t src, uint64_t n) {
  uint8_t buf[PIECE];
  int backwards = dst > src && dst - src < n; /* overlapping, dst after src */
  uint64_t done = 0;
  while (done < n) {
    uint64_t k = n - done < PIECE ? n - done : PIECE;
    uint64_t at = backwards ? n - done - k : done;
    if (m->read(m->ctx, src + at, buf, k) != k || m->write(m->ctx, dst + at, buf, k) != k) break;
    done += k;
  }
  return done;
}

/* Fills n bytes at dst with the `unit`-byte pattern (1 or 4): the bytes filled. */
static uint64_t fill_bytes(const struct fg_mem* m, uint64_t dst, uint32_t pattern, uint32_t unit,
                           uint64_t n) {
  uint8_t buf[PIECE];
  if (unit == 4) {
    for (size_t i = 0; i < sizeof buf; i += 4) memcpy(buf + i, &pattern, 4);
  } else {
    memset(buf, (int)(pattern & 0xff), sizeof buf);
  }
  uint64_t done = 0;
  while (done < n) {
    uint64_t k = n - done < PIECE ? n - done : PIECE;
    if (m->write(m->ctx, dst + done, buf, k) != k) break;
    done += k;
  }
  return done;
}

/* The transfer of LAUNCH_DMA v: between virtual addresses only. */
static void transfer(const struct fg_copy* c, const struct fg_mem* m, struct fg_copy_stats* st,
                     uint32_t v) {
  if (FIELD(v, RPG_NVC8B5_LAUNCH_DMA_DATA_TRANSFER_TYPE) == 0 ||
      FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SRC_TYPE) != 0 ||
      FIELD(v, RPG_NVC8B5_LAUNCH_DMA_DST_TYPE) != 0)
    return;
  uint32_t lines = FIELD(v, RPG_NVC8B5_LAUNCH_DMA_MULTI_LINE_ENABLE) ? c->count : 1;
  int fill = FIELD(v, RPG_NVC8B5_LAUNCH_DMA_REMAP_ENABLE) != 0;
  uint32_t comp = (uint32_t)FIELD(c->remap, RPG_NVC8B5_SET_REMAP_COMPONENTS_COMPONENT_SIZE) + 1;
  uint32_t ncomp =
      (uint32_t)FIELD(c->remap, RPG_NVC8B5_SET_REMAP_COMPONENTS_NUM_DST_COMPONENTS) + 1;
  uint64_t bytes = fill ? (uint64_t)c->line * comp * ncomp : c->line;
  int const_a = FIELD(c->remap, RPG_NVC8B5_SET_REMAP_COMPONENTS_DST_X) ==
                RPG_NVC8B5_SET_REMAP_COMPONENTS_DST_X_CONST_A;
  if (fill && !(const_a && (comp == 4 || comp == 1))) return; /* remaps other than a fill */
  for (uint32_t l = 0; l < lines && lines < (1u << 20); ++l) {
    uint64_t dst = c->out + (uint64_t)l * c->pitch_out;
    uint64_t done = fill ? fill_bytes(m, dst, c->const_a, comp, bytes)
                         : copy_bytes(m, dst, c->in + (uint64_t)l * c->pitch_in, bytes);
    st->bytes += done;
    st->short_bytes += bytes - done;
  }
  ++*(fill ? &st->fills : &st->copies);
}

/* The semaphore of LAUNCH_DMA v, released after the transfer. */
static void release(const struct fg_copy* c, const struct fg_mem* m, struct fg_copy_stats* st,
                    uint32_t v) {
  uint32_t type = (uint32_t)FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_TYPE);
  if (type == 0) return;
  int four_word = type == RPG_NVC6B5_LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE;
  struct fg_sem s = {.va = c->sem,
                     .payload = c->payload,
                     .size = (uint8_t)(four_word ? 8 : 4),
                     .timestamp = (uint8_t)four_word};
  if (FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_ENABLE)) {
    uint32_t red = (uint32_t)FIELD(v, RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION);
    s.size = 4;
    s.reduce = red == RPG_NVC6B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_IADD ||
               red == RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_INC;
    s.op = red == RPG_NVC8B5_LAUNCH_DMA_SEMAPHORE_REDUCTION_INC ? FG_RED_INC : FG_RED_ADD;
  }
  if (fg_sem_release(m, &s)) ++st->releases;
}

/* The high word of a 57-bit address (bits 56:32). */
static uint64_t set_upper(uint64_t a, uint32_t v) {
  return (a & 0xffffffffull) | ((uint64_t)(v & 0x1ffffff) << 32);
}
static uint64_t set_lower(uint64_t a, uint32_t v) {
  return (a & ~0xffffffffull) | v;
}

void fg_copy_method(struct fg_copy* c, const struct fg_mem* m, struct fg_copy_stats* st,
                    uint32_t method, uint32_t v) {
  switch (method) {
    case RPG_NVC8B5_SET_SEMAPHORE_A:
      c->sem = set_upper(c->sem, v);
      break;
    case RPG_NVC8B5_SET_SEMAPHORE_B:
      c->sem = set_lower(c->sem, v);
      break;
    case RPG_NVC8B5_SET_SEMAPHORE_PAYLOAD:
      c->payload = v;
      break;
    case RPG_NVC8B5_OFFSET_IN_UPPER:
      c->in = set_upper(c->in, v);
      break;
    case RPG_NVC8B5_OFFSET_IN_LOWER:
      c->in = set_lower(c->in, v);
      break;
    case RPG_NVC8B5_OFFSET_OUT_UPPER:
      c->out = set_upper(c->out, v);
      break;
    case RPG_NVC8B5_OFFSET_OUT_LOWER:
      c->out = set_lower(c->out, v);
      break;
    case RPG_NVC6B5_PITCH_IN:
      c->pitch_in = v;
      break;
    case RPG_NVC6B5_PITCH_OUT:
      c->pitch_out = v;
      break;
    case RPG_NVC8B5_LINE_LENGTH_IN:
      c->line = v;
      break;
    case RPG_NVC6B5_LINE_COUNT:
      c->count = v;
      break;
    case RPG_NVC8B5_SET_REMAP_CONST_A:
      c->const_a = v;
      break;
    case RPG_NVC8B5_SET_REMAP_COMPONENTS:
      c->remap = v;
      break;
    case RPG_NVC8B5_LAUNCH_DMA:
      transfer(c, m, st, v);
      release(c, m, st, v);
      break;
    default:
      break;
  }
}
