/* Compute launches completed, not executed (launch.h). Layouts: generated/gpu_compute.h. */
#include "launch.h"

#include <string.h>

#include "../generated/gpu_compute.h"

#define BITS(v, hi, lo) (((v) >> (lo)) & ((2ull << ((hi) - (lo))) - 1))
#define FIELD(v, name) BITS((uint64_t)(v), RPG_##name##_HI, RPG_##name##_LO)
/* A QMD field (one 32-bit word: tools/gpu_methods/check_gpu_compute.py checks it). */
#define QF(q, name) qmd_bits(q, RPG_##name##_HI, RPG_##name##_LO)
#define QFI(q, name, i) qmd_bits(q, RPG_##name##_HI(i), RPG_##name##_LO(i))

/* One list of reduction values serves every form (enum fg_reduction). */
_Static_assert(RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_ADD == FG_RED_ADD &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_MIN == FG_RED_MIN &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_MAX == FG_RED_MAX &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_INC == FG_RED_INC &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_DEC == FG_RED_DEC &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_AND == FG_RED_AND &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_OR == FG_RED_OR &&
                   RPG_NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP_RED_XOR == FG_RED_XOR,
               "QMD 04_00 reductions");
_Static_assert(RPG_NVCBC0_QMDV03_00_RELEASE0_REDUCTION_OP_RED_INC == FG_RED_INC &&
                   RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_REDUCTION_OP_RED_XOR == FG_RED_XOR &&
                   RPG_NVCBC0_SET_REPORT_SEMAPHORE_D_REDUCTION_OP_RED_XOR == FG_RED_XOR,
               "reductions of the other forms");
/* The version is read before the layout is known: both keep it at one place. */
_Static_assert(RPG_NVCBC0_QMDV03_00_QMD_MAJOR_VERSION_LO ==
                       RPG_NVCBC0_QMDV04_00_QMD_MAJOR_VERSION_LO &&
                   RPG_NVCBC0_QMDV03_00_QMD_MAJOR_VERSION_HI ==
                       RPG_NVCBC0_QMDV04_00_QMD_MAJOR_VERSION_HI,
               "QMD_MAJOR_VERSION");
_Static_assert(RPG_NVCBC0_QMDV04_00_SIZE_BYTES <= FG_QMD_MAX, "QMD size");

static uint32_t qmd_bits(const uint8_t* q, uint32_t hi, uint32_t lo) {
  uint32_t w;
  memcpy(&w, q + (lo / 32) * 4, 4);
  return (uint32_t)BITS((uint64_t)w, hi % 32, lo % 32);
}

/* ---- semaphores ---- */

static uint64_t reduce(uint32_t op, uint64_t cur, uint64_t v) {
  switch (op) {
    case FG_RED_ADD:
      return cur + v;
    case FG_RED_MIN:
      return cur < v ? cur : v;
    case FG_RED_MAX:
      return cur > v ? cur : v;
    case FG_RED_INC: /* wraps to 0 past the payload */
      return cur >= v ? 0 : cur + 1;
    case FG_RED_DEC: /* wraps to the payload below 1 */
      return cur == 0 || cur > v ? v : cur - 1;
    case FG_RED_AND:
      return cur & v;
    case FG_RED_OR:
      return cur | v;
    default:
      return cur ^ v;
  }
}

int fg_sem_release(const struct fg_mem* m, const struct fg_sem* s) {
  uint32_t size = s->size == 8 ? 8 : 4;
  uint64_t v = s->payload, cur = 0;
  if (s->reduce) {
    if (m->read(m->ctx, s->va, &cur, size) != size) return 0;
    v = reduce(s->op, cur, v);
  }
  if (size == 4) v &= 0xffffffffull;
  if (s->timestamp) { /* the time first: the payload is what a waiter polls */
    uint64_t t = m->now(m->ctx);
    if (m->write(m->ctx, s->va + 8, &t, 8) != 8) return 0;
  }
  return m->write(m->ctx, s->va, &v, size) == size;
}

/* ---- QMD ---- */

static void decode_v3_sem(const uint8_t* q, struct fg_launch* l, uint32_t k) {
  uint32_t en, lo, hi, plo, phi, size, p64, red, op;
#define V3_RELEASE(K)                                          \
  en = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_ENABLE);            \
  lo = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_ADDRESS_LOWER);     \
  hi = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_ADDRESS_UPPER);     \
  plo = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_PAYLOAD_LOWER);    \
  phi = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_PAYLOAD_UPPER);    \
  size = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_STRUCTURE_SIZE);  \
  p64 = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_PAYLOAD64B);       \
  red = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_REDUCTION_ENABLE); \
  op = QF(q, NVCBC0_QMDV03_00_RELEASE##K##_REDUCTION_OP)
  if (k == 0) {
    V3_RELEASE(0);
  } else if (k == 1) {
    V3_RELEASE(1);
  } else {
    V3_RELEASE(2);
  }
#undef V3_RELEASE
  if (!en) return;
  struct fg_sem* s = &l->sems[l->n_sems++];
  s->va = ((uint64_t)hi << 32) | lo;
  s->payload = ((uint64_t)phi << 32) | plo;
  s->size = size == RPG_NVCBC0_QMDV03_00_RELEASE0_STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS || p64 ? 8 : 4;
  s->timestamp = size == RPG_NVCBC0_QMDV03_00_RELEASE0_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS;
  s->reduce = (uint8_t)red;
  s->op = (uint8_t)op;
}

static uint32_t dep_action(uint32_t a) {
  if (a == RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE ||
      a == RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_INVALIDATE_COPY_SCHEDULE)
    return FG_DEP_SCHEDULE;
  if (a == RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_DECREMENT_DEPENDENCE)
    return FG_DEP_DECREMENT;
  return FG_DEP_NONE; /* INCREMENT_PUT: a queue's, not a grid's */
}
_Static_assert(RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_SCHEDULE ==
                       RPG_NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION_QMD_SCHEDULE &&
                   RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_DECREMENT_DEPENDENCE ==
                       RPG_NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION_QMD_DECREMENT_DEPENDENCE &&
                   RPG_NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION_QMD_INVALIDATE_COPY_SCHEDULE ==
                       RPG_NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION_QMD_INVALIDATE_COPY_SCHEDULE,
               "dependent QMD actions");

static void add_dep(struct fg_launch* l, uint32_t enable, uint32_t action, uint32_t ptr) {
  if (!enable || ptr == 0 || dep_action(action) == FG_DEP_NONE) return;
  l->deps[l->n_deps].va = (uint64_t)ptr << 8; /* QMD addresses are 256-byte aligned */
  l->deps[l->n_deps++].action = dep_action(action);
}

/* Version 03_00 (clc6c0qmd.h, clc9c0qmd.h, clcbc0qmd.h). */
static void decode_v3(const uint8_t* q, struct fg_launch* l) {
  l->minor = QF(q, NVCBC0_QMDV03_00_QMD_VERSION);
  l->dependence = QF(q, NVCBC0_QMDV03_00_DEPENDENCE_COUNTER);
  l->grid[0] = QF(q, NVCBC0_QMDV03_00_CTA_RASTER_WIDTH);
  l->grid[1] = QF(q, NVCBC0_QMDV03_00_CTA_RASTER_HEIGHT);
  l->grid[2] = QF(q, NVCBC0_QMDV03_00_CTA_RASTER_DEPTH);
  l->block[0] = QF(q, NVCBC0_QMDV03_00_CTA_THREAD_DIMENSION0);
  l->block[1] = QF(q, NVCBC0_QMDV03_00_CTA_THREAD_DIMENSION1);
  l->block[2] = QF(q, NVCBC0_QMDV03_00_CTA_THREAD_DIMENSION2);
  l->shared_bytes = QF(q, NVCBC0_QMDV03_00_SHARED_MEMORY_SIZE);
  l->registers = QF(q, NVCBC0_QMDV03_00_REGISTER_COUNT_V);
  l->program = ((uint64_t)QF(q, NVCBC0_QMDV03_00_PROGRAM_ADDRESS_UPPER) << 32) |
               QF(q, NVCBC0_QMDV03_00_PROGRAM_ADDRESS_LOWER);
  for (uint32_t i = 0; i < FG_MAX_CB; ++i) {
    if (!QFI(q, NVCBC0_QMDV03_00_CONSTANT_BUFFER_VALID, i)) continue;
    l->cb_valid |= 1u << i;
    l->cb_va[i] = ((uint64_t)QFI(q, NVCBC0_QMDV03_00_CONSTANT_BUFFER_ADDR_UPPER, i) << 32) |
                  QFI(q, NVCBC0_QMDV03_00_CONSTANT_BUFFER_ADDR_LOWER, i);
    l->cb_size[i] = QFI(q, NVCBC0_QMDV03_00_CONSTANT_BUFFER_SIZE_SHIFTED4, i) << 4;
  }
  for (uint32_t k = 0; k < FG_MAX_SEMS; ++k) decode_v3_sem(q, l, k);
  uint32_t ptr = QF(q, NVCBC0_QMDV03_00_DEPENDENT_QMD0_POINTER);
  add_dep(l, QF(q, NVCBC0_QMDV03_00_DEPENDENT_QMD0_ENABLE),
          QF(q, NVCBC0_QMDV03_00_DEPENDENT_QMD0_ACTION), ptr);
  /* 03_00 has one pointer; its second dependent (QMD1) names the same QMD. */
  add_dep(l, QF(q, NVCBC0_QMDV03_00_DEPENDENT_QMD1_ENABLE),
          QF(q, NVCBC0_QMDV03_00_DEPENDENT_QMD1_ACTION), ptr);
}

static void decode_v4_sem(const uint8_t* q, struct fg_launch* l, uint32_t i) {
  if (!QFI(q, NVCBC0_QMDV04_00_RELEASE_ENABLE, i)) return;
  uint32_t lo, hi, plo, phi;
  if (i == 0) {
    lo = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_ADDR_LOWER);
    hi = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_ADDR_UPPER);
    plo = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_PAYLOAD_LOWER);
    phi = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE0_PAYLOAD_UPPER);
  } else if (i == 1) {
    lo = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE1_ADDR_LOWER);
    hi = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE1_ADDR_UPPER);
    plo = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE1_PAYLOAD_LOWER);
    phi = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE1_PAYLOAD_UPPER);
  } else {
    lo = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE2_ADDR_LOWER);
    hi = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE2_ADDR_UPPER);
    plo = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE2_PAYLOAD_LOWER);
    phi = QF(q, NVCBC0_QMDV04_00_RELEASE_SEMAPHORE2_PAYLOAD_UPPER);
  }
  uint32_t size = QFI(q, NVCBC0_QMDV04_00_RELEASE_STRUCTURE_SIZE, i);
  struct fg_sem* s = &l->sems[l->n_sems++];
  s->va = ((uint64_t)hi << 32) | lo;
  s->payload = ((uint64_t)phi << 32) | plo;
  s->size = size == RPG_NVCBC0_QMDV04_00_RELEASE_STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS ||
                    QFI(q, NVCBC0_QMDV04_00_RELEASE_PAYLOAD64B, i)
                ? 8
                : 4;
  s->timestamp = size == RPG_NVCBC0_QMDV04_00_RELEASE_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS;
  s->reduce = (uint8_t)QFI(q, NVCBC0_QMDV04_00_RELEASE_REDUCTION_ENABLE, i);
  s->op = (uint8_t)QFI(q, NVCBC0_QMDV04_00_RELEASE_REDUCTION_OP, i);
}

/* Version 04_00 (clcbc0qmd.h). */
static void decode_v4(const uint8_t* q, struct fg_launch* l) {
  l->minor = QF(q, NVCBC0_QMDV04_00_QMD_MINOR_VERSION);
  l->dependence = QF(q, NVCBC0_QMDV04_00_DEPENDENCE_COUNTER);
  l->null_grid = QF(q, NVCBC0_QMDV04_00_QMD_TYPE) == RPG_NVCBC0_QMDV04_00_QMD_TYPE_GRID_NULL;
  l->grid[0] = QF(q, NVCBC0_QMDV04_00_GRID_WIDTH);
  l->grid[1] = QF(q, NVCBC0_QMDV04_00_GRID_HEIGHT);
  l->grid[2] = QF(q, NVCBC0_QMDV04_00_GRID_DEPTH);
  l->block[0] = QF(q, NVCBC0_QMDV04_00_CTA_THREAD_DIMENSION0);
  l->block[1] = QF(q, NVCBC0_QMDV04_00_CTA_THREAD_DIMENSION1);
  l->block[2] = QF(q, NVCBC0_QMDV04_00_CTA_THREAD_DIMENSION2);
  l->shared_bytes = QF(q, NVCBC0_QMDV04_00_SHARED_MEMORY_SIZE);
  l->registers = QF(q, NVCBC0_QMDV04_00_REGISTER_COUNT);
  l->program = ((uint64_t)QF(q, NVCBC0_QMDV04_00_PROGRAM_ADDRESS_UPPER) << 32) |
               QF(q, NVCBC0_QMDV04_00_PROGRAM_ADDRESS_LOWER);
  for (uint32_t i = 0; i < FG_MAX_CB; ++i) {
    if (!QFI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_VALID, i)) continue;
    l->cb_valid |= 1u << i;
    uint64_t shifted =
        ((uint64_t)QFI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_ADDR_UPPER_SHIFTED6, i) << 32) |
        QFI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_ADDR_LOWER_SHIFTED6, i);
    l->cb_va[i] = shifted << 6;
    l->cb_size[i] = QFI(q, NVCBC0_QMDV04_00_CONSTANT_BUFFER_SIZE_SHIFTED4, i) << 4;
  }
  for (uint32_t i = 0; i < FG_MAX_SEMS; ++i) decode_v4_sem(q, l, i);
  add_dep(l, QFI(q, NVCBC0_QMDV04_00_DEPENDENT_QMD_ENABLE, 0),
          QFI(q, NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION, 0),
          QF(q, NVCBC0_QMDV04_00_DEPENDENT_QMD0_POINTER));
  add_dep(l, QFI(q, NVCBC0_QMDV04_00_DEPENDENT_QMD_ENABLE, 1),
          QFI(q, NVCBC0_QMDV04_00_DEPENDENT_QMD_ACTION, 1),
          QF(q, NVCBC0_QMDV04_00_DEPENDENT_QMD1_POINTER));
}

int fg_qmd_decode(const uint8_t* q, uint32_t n, uint64_t va, struct fg_launch* out) {
  memset(out, 0, sizeof *out);
  out->qmd_va = va;
  if (n < RPG_NVCBC0_QMDV03_00_SIZE_BYTES) return FG_QMD_SHORT;
  out->major = QF(q, NVCBC0_QMDV04_00_QMD_MAJOR_VERSION);
  if (out->major == 3) {
    decode_v3(q, out);
  } else if (out->major == 4) {
    if (n < RPG_NVCBC0_QMDV04_00_SIZE_BYTES) return FG_QMD_SHORT;
    decode_v4(q, out);
  } else {
    return FG_QMD_VERSION;
  }
  if (out->grid[0] == 0 || out->grid[1] == 0 || out->grid[2] == 0) out->null_grid = 1;
  return FG_QMD_OK;
}

/* ---- scheduling and completing QMDs ---- */

/* Reads and decodes the QMD at va: FG_QMD_OK, FG_QMD_VERSION, or FG_QMD_SHORT (unreadable). */
static int read_qmd(const struct fg_env* e, uint64_t va, struct fg_launch* l) {
  uint8_t q[FG_QMD_MAX];
  uint32_t n = RPG_NVCBC0_QMDV04_00_SIZE_BYTES;
  if (e->mem->read(e->mem->ctx, va, q, n) != n) {
    n = RPG_NVCBC0_QMDV03_00_SIZE_BYTES; /* a 03_00 QMD at the end of a mapping */
    if (e->mem->read(e->mem->ctx, va, q, n) != n) return FG_QMD_SHORT;
  }
  return fg_qmd_decode(q, n, va, l);
}

static int waiting_index(const struct fg_compute* c, uint64_t va) {
  for (uint32_t i = 0; i < c->n_waiting; ++i) {
    if (c->waiting[i].va == va) return (int)i;
  }
  return -1;
}

static void wait_for(struct fg_compute* c, uint64_t va, uint32_t left) {
  int k = waiting_index(c, va);
  if (k >= 0) {
    c->waiting[k].left = left;
    return;
  }
  if (c->n_waiting == FG_WAITING) { /* the oldest goes: a node of a graph long done */
    memmove(c->waiting, c->waiting + 1, sizeof c->waiting[0] * (FG_WAITING - 1));
    --c->n_waiting;
  }
  c->waiting[c->n_waiting].va = va;
  c->waiting[c->n_waiting++].left = left;
}

static void unwait(struct fg_compute* c, int k) {
  c->waiting[k] = c->waiting[--c->n_waiting];
}

static void run(struct fg_compute* c, const struct fg_env* e, const struct fg_launch* l, int depth);

/* A dependent QMD (depth > 0) or a decrement: read it and run it when nothing holds it. */
static void dependent(struct fg_compute* c, const struct fg_env* e, uint64_t va, uint32_t action,
                      int depth) {
  int k = waiting_index(c, va);
  if (action == FG_DEP_DECREMENT && k >= 0) {
    if (--c->waiting[k].left > 0) return;
    unwait(c, k);
  }
  struct fg_launch l;
  if (read_qmd(e, va, &l) != FG_QMD_OK) {
    ++e->stats->deps_unread;
    return;
  }
  if (action == FG_DEP_DECREMENT && k < 0 && l.dependence > 1) {
    wait_for(c, va, l.dependence - 1);
    return;
  }
  if (action == FG_DEP_SCHEDULE && l.dependence > 0) { /* held until decremented to 0 */
    if (k < 0) wait_for(c, va, l.dependence);
    return;
  }
  run(c, e, &l, depth);
}

/* The work of a decoded QMD is done: report it, release its semaphores, follow it. */
static void run(struct fg_compute* c, const struct fg_env* e, const struct fg_launch* l,
                int depth) {
  if (l->null_grid) {
    ++e->stats->null_grids;
  } else {
    ++e->stats->launches;
    if (e->sink != 0 && e->sink->launch != 0) e->sink->launch(e->sink->ctx, c, l);
  }
  for (uint32_t i = 0; i < l->n_sems; ++i) {
    if (fg_sem_release(e->mem, &l->sems[i])) {
      ++e->stats->releases;
    } else {
      ++e->stats->lost;
    }
  }
  for (uint32_t i = 0; i < l->n_deps && depth < 8; ++i) {
    dependent(c, e, l->deps[i].va, l->deps[i].action, depth + 1);
  }
}

/* A QMD the channel schedules: FG_DONE or FG_STOP. */
static int schedule(struct fg_compute* c, const struct fg_env* e, uint64_t va, const uint8_t* bytes,
                    uint32_t n) {
  struct fg_launch l;
  int r = bytes != 0 ? fg_qmd_decode(bytes, n, va, &l) : read_qmd(e, va, &l);
  if (r != FG_QMD_OK || !e->complete) {
    c->stop = !e->complete          ? FG_STOP_POLICY
              : r == FG_QMD_VERSION ? FG_STOP_VERSION
                                    : FG_STOP_UNREADABLE;
    c->stop_qmd = va;
    return FG_STOP;
  }
  if (l.dependence > 0) { /* held until other QMDs decrement its counter to 0 */
    if (waiting_index(c, va) < 0) wait_for(c, va, l.dependence);
    return FG_DONE;
  }
  run(c, e, &l, 0);
  return FG_DONE;
}

static void bump_dependence(struct fg_compute* c, const struct fg_env* e, uint64_t va, int up) {
  int k = waiting_index(c, va);
  if (up) {
    if (k >= 0) {
      ++c->waiting[k].left;
    } else {
      wait_for(c, va, 1);
    }
    return;
  }
  dependent(c, e, va, FG_DEP_DECREMENT, 0);
}

int fg_is_launch(uint32_t method, uint32_t value) {
  if (method == RPG_NVCBC0_SEND_SIGNALING_PCAS_B) {
    return FIELD(value, NVCBC0_SEND_SIGNALING_PCAS_B_SCHEDULE) != 0;
  }
  if (method != RPG_NVCBC0_SEND_SIGNALING_PCAS2_B) return 0;
  uint32_t a = (uint32_t)FIELD(value, NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION);
  return a == RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_SCHEDULE ||
         a == RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_COPY_SCHEDULE ||
         a == RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_PREFETCH_SCHEDULE ||
         a == RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_SCHEDULE ||
         a ==
             RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INVALIDATE_PREFETCH_COPY_FORCE_REQUIRE_SCHEDULING;
}

static int pcas(struct fg_compute* c, const struct fg_env* e, uint32_t method, uint32_t value) {
  if (fg_is_launch(method, value)) return schedule(c, e, c->qmd_va, 0, 0);
  if (method != RPG_NVCBC0_SEND_SIGNALING_PCAS2_B) return FG_DONE;
  uint32_t a = (uint32_t)FIELD(value, NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION);
  if (a == RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_INCREMENT_DEPENDENCE) {
    bump_dependence(c, e, c->qmd_va, 1);
  } else if (a == RPG_NVCBC0_SEND_SIGNALING_PCAS2_B_PCAS_ACTION_DECREMENT_DEPENDENCE) {
    bump_dependence(c, e, c->qmd_va, 0);
  }
  return FG_DONE; /* NOP, INVALIDATE, PREFETCH, INCREMENT_PUT: nothing a completed grid needs */
}

/* LOAD_INLINE_QMD_DATA(i): the QMD arrives in the pushbuffer; with its last word it is stored at
 * SET_INLINE_QMD_ADDRESS and scheduled. */
static int inline_qmd(struct fg_compute* c, const struct fg_env* e, uint32_t i, uint32_t value) {
  uint32_t n = c->inline_bytes ? c->inline_bytes : RPG_NVCBC0_QMDV03_00_SIZE_BYTES;
  if (4 * i + 4 > n) return FG_DONE;
  memcpy(c->inline_qmd + 4 * i, &value, 4);
  if (4 * i + 4 < n) return FG_DONE;
  uint64_t va = c->inline_shifted << 8;
  if (va != 0) e->mem->write(e->mem->ctx, va, c->inline_qmd, n);
  return schedule(c, e, va, c->inline_qmd, n);
}

/* ---- inline to memory ---- */

static void i2m_flush(struct fg_compute* c, const struct fg_env* e) {
  if (c->buf_len == 0) return;
  if (e->mem->write(e->mem->ctx, c->buf_va, c->buf, c->buf_len) == c->buf_len) {
    e->stats->i2m_bytes += c->buf_len;
  } else {
    ++e->stats->lost;
  }
  c->buf_len = 0;
}

static void i2m_put(struct fg_compute* c, const struct fg_env* e, uint64_t va, const void* p,
                    uint32_t n) {
  if (c->buf_len != 0 && (va != c->buf_va + c->buf_len || c->buf_len + n > FG_INLINE_BUF)) {
    i2m_flush(c, e);
  }
  if (c->buf_len == 0) c->buf_va = va;
  memcpy(c->buf + c->buf_len, p, n);
  c->buf_len += n;
}

static void i2m_end(struct fg_compute* c, const struct fg_env* e) {
  i2m_flush(c, e);
  c->i2m_active = 0;
  if (FIELD(c->i2m_launch, NVCBC0_LAUNCH_DMA_COMPLETION_TYPE) !=
      RPG_NVCBC0_LAUNCH_DMA_COMPLETION_TYPE_RELEASE_SEMAPHORE)
    return;
  int one = FIELD(c->i2m_launch, NVCBC0_LAUNCH_DMA_SEMAPHORE_STRUCT_SIZE) ==
            RPG_NVCBC0_LAUNCH_DMA_SEMAPHORE_STRUCT_SIZE_ONE_WORD;
  struct fg_sem s = {c->i2m_sem, c->i2m_payload, 4, (uint8_t)!one, 0, 0};
  if (fg_sem_release(e->mem, &s)) {
    ++e->stats->releases;
  } else {
    ++e->stats->lost;
  }
}

/* One dword of LOAD_INLINE_DATA. Each line of LINE_LENGTH_IN bytes starts at a dword of its own;
 * line k goes to OFFSET_OUT + k * PITCH_OUT. */
static void i2m_data(struct fg_compute* c, const struct fg_env* e, uint32_t value) {
  if (!c->i2m_active) return;
  uint32_t lines = c->i2m_count ? c->i2m_count : 1;
  uint64_t per_line = (c->i2m_line + 3) / 4, d = c->i2m_done++;
  if (per_line == 0) {
    i2m_end(c, e);
    return;
  }
  uint64_t line = d / per_line, at = (d % per_line) * 4;
  uint32_t n = c->i2m_line - at < 4 ? (uint32_t)(c->i2m_line - at) : 4;
  if (FIELD(c->i2m_launch, NVCBC0_LAUNCH_DMA_DST_MEMORY_LAYOUT) ==
      RPG_NVCBC0_LAUNCH_DMA_DST_MEMORY_LAYOUT_PITCH) {
    i2m_put(c, e, c->i2m_dst + line * c->i2m_pitch + at, &value, n);
  } else {
    e->stats->block_linear += n;
  }
  if (c->i2m_done >= per_line * lines) i2m_end(c, e);
}

/* ---- report semaphores ---- */

/* SET_REPORT_SEMAPHORE_D: the release form of the compute classes since Volta. */
static void report_d(struct fg_compute* c, const struct fg_env* e, uint32_t v) {
  if (FIELD(v, NVCBC0_SET_REPORT_SEMAPHORE_D_OPERATION) !=
      RPG_NVCBC0_SET_REPORT_SEMAPHORE_D_OPERATION_RELEASE)
    return;
  int one = FIELD(v, NVCBC0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE) ==
            RPG_NVCBC0_SET_REPORT_SEMAPHORE_D_STRUCTURE_SIZE_ONE_WORD;
  struct fg_sem s = {c->rep_va,
                     c->rep_payload,
                     4,
                     (uint8_t)!one,
                     (uint8_t)FIELD(v, NVCBC0_SET_REPORT_SEMAPHORE_D_REDUCTION_ENABLE),
                     (uint8_t)FIELD(v, NVCBC0_SET_REPORT_SEMAPHORE_D_REDUCTION_OP)};
  if (fg_sem_release(e->mem, &s)) {
    ++e->stats->releases;
  } else {
    ++e->stats->lost;
  }
}

/* REPORT_SEMAPHORE_EXECUTE (Ada, Hopper): a release, or an acquire the channel waits at. */
static int report_execute(struct fg_compute* c, const struct fg_env* e, uint32_t v) {
  uint32_t op = (uint32_t)FIELD(v, NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION);
  uint32_t size = (uint32_t)FIELD(v, NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE);
  int wide = FIELD(v, NVCBC0_REPORT_SEMAPHORE_EXECUTE_PAYLOAD_SIZE64) ==
                 RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_PAYLOAD_SIZE64_TRUE ||
             size == RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_SEMAPHORE_TWO_WORDS;
  if (op == RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_ACQUIRE) {
    uint64_t cur = 0, want = wide ? c->exe_payload : (uint32_t)c->exe_payload;
    if (e->mem->read(e->mem->ctx, c->exe_va, &cur, wide ? 8 : 4) != (wide ? 8u : 4u)) {
      return FG_DONE; /* memory the replay cannot see: taken as met */
    }
    if (cur == want) return FG_DONE;
    c->acq_va = c->exe_va;
    c->acq_want = want;
    c->acq_value = cur;
    return FG_RETRY;
  }
  if (op != RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_OPERATION_RELEASE) return FG_DONE;
  struct fg_sem s = {
      c->exe_va,
      c->exe_payload,
      (uint8_t)(wide ? 8 : 4),
      size == RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE_STRUCTURE_SIZE_SEMAPHORE_FOUR_WORDS,
      (uint8_t)FIELD(v, NVCBC0_REPORT_SEMAPHORE_EXECUTE_REDUCTION_ENABLE),
      (uint8_t)FIELD(v, NVCBC0_REPORT_SEMAPHORE_EXECUTE_REDUCTION_OP)};
  if (fg_sem_release(e->mem, &s)) {
    ++e->stats->releases;
  } else {
    ++e->stats->lost;
  }
  return FG_DONE;
}

#define LO32(x, v) (x) = ((x) & ~0xffffffffull) | (v)
#define HI32(x, v) (x) = ((x)&0xffffffffull) | ((uint64_t)(v) << 32)

/* The methods only Ada's and Hopper's compute classes have (0x158-0x168: Ampere has none). */
static int ada_method(struct fg_compute* c, const struct fg_env* e, uint32_t m, uint32_t v) {
  switch (m) {
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_LOWER:
      LO32(c->exe_payload, v);
      return FG_DONE;
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_PAYLOAD_UPPER:
      HI32(c->exe_payload, v);
      return FG_DONE;
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_LOWER:
      LO32(c->exe_va, v);
      return FG_DONE;
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_UPPER:
      HI32(c->exe_va, FIELD(v, NVCBC0_SET_REPORT_SEMAPHORE_ADDRESS_UPPER_UPPER));
      return FG_DONE;
    case RPG_NVCBC0_REPORT_SEMAPHORE_EXECUTE:
      return report_execute(c, e, v);
    default:
      return FG_DONE;
  }
}

static void i2m_launch(struct fg_compute* c, const struct fg_env* e, uint32_t v) {
  i2m_flush(c, e);
  c->i2m_launch = v;
  c->i2m_done = 0;
  c->i2m_active = 1;
}

/* Methods that only set state: 1 when `m` was one. */
static int state_method(struct fg_compute* c, uint32_t m, uint32_t v) {
  switch (m) {
    case RPG_NVCBC0_OFFSET_OUT_UPPER:
      HI32(c->i2m_dst, FIELD(v, NVCBC0_OFFSET_OUT_UPPER_VALUE));
      return 1;
    case RPG_NVCBC0_OFFSET_OUT:
      LO32(c->i2m_dst, v);
      return 1;
    case RPG_NVCBC0_LINE_LENGTH_IN:
      c->i2m_line = v;
      return 1;
    case RPG_NVCBC0_LINE_COUNT:
      c->i2m_count = v;
      return 1;
    case RPG_NVCBC0_PITCH_OUT:
      c->i2m_pitch = v;
      return 1;
    case RPG_NVCBC0_SET_I2M_SEMAPHORE_A:
      HI32(c->i2m_sem, FIELD(v, NVCBC0_SET_I2M_SEMAPHORE_A_OFFSET_UPPER));
      return 1;
    case RPG_NVCBC0_SET_I2M_SEMAPHORE_B:
      LO32(c->i2m_sem, v);
      return 1;
    case RPG_NVCBC0_SET_I2M_SEMAPHORE_C:
      c->i2m_payload = v;
      return 1;
    case RPG_NVCBC0_SEND_PCAS_A:
      c->qmd_va = (uint64_t)FIELD(v, NVCBC0_SEND_PCAS_A_QMD_ADDRESS_SHIFTED8) << 8;
      return 1;
    case RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A: /* the address >> 8, upper and lower half */
      HI32(c->inline_shifted, FIELD(v, NVCBC0_SET_INLINE_QMD_ADDRESS_A_QMD_ADDRESS_SHIFTED8_UPPER));
      c->inline_bytes = FIELD(v, NVCBC0_SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE) ==
                                RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_A_INLINE_SIZE_INLINE_384
                            ? 384
                            : 256;
      return 1;
    case RPG_NVCBC0_SET_INLINE_QMD_ADDRESS_B:
      LO32(c->inline_shifted, v);
      return 1;
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_A:
      HI32(c->rep_va, FIELD(v, NVCBC0_SET_REPORT_SEMAPHORE_A_OFFSET_UPPER));
      return 1;
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_B:
      LO32(c->rep_va, v);
      return 1;
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_C:
      c->rep_payload = v;
      return 1;
    default:
      return 0;
  }
}

int fg_compute_method(struct fg_compute* c, const struct fg_env* e, uint32_t m, uint32_t v) {
  if (state_method(c, m, v)) return FG_DONE;
  if (m >= RPG_NVCBC0_LOAD_INLINE_QMD_DATA(0) &&
      m < RPG_NVCBC0_LOAD_INLINE_QMD_DATA(RPG_NVCBC0_QMDV04_00_SIZE_BYTES / 4)) {
    return inline_qmd(c, e, (m - RPG_NVCBC0_LOAD_INLINE_QMD_DATA(0)) / 4, v);
  }
  switch (m) {
    case RPG_NVCBC0_LAUNCH_DMA:
      i2m_launch(c, e, v);
      return FG_DONE;
    case RPG_NVCBC0_LOAD_INLINE_DATA:
      i2m_data(c, e, v);
      return FG_DONE;
    case RPG_NVCBC0_SEND_SIGNALING_PCAS_B:
    case RPG_NVCBC0_SEND_SIGNALING_PCAS2_B:
      return pcas(c, e, m, v);
    case RPG_NVCBC0_SET_REPORT_SEMAPHORE_D:
      report_d(c, e, v);
      return FG_DONE;
    default:
      break;
  }
  if ((c->cls & 0xffff) >= 0xc9c0) return ada_method(c, e, m, v);
  return FG_DONE;
}
