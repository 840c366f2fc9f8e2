/* The preload shim's stack walk (unwind.h): from the registers of this function, frame by frame
 * through the CFI rules of each PC (cached per PC; a miss asks modules.c), reading return
 * addresses and saved frame pointers only inside the calling thread's stack mapping. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "unwind.h"

/* A direct-mapped cache of rules by PC. Each slot has a sequence number (odd while it is being
 * written): a reader that sees it change, or odd, treats the slot as a miss, and a writer that
 * finds it odd leaves it alone, so no thread (or signal handler) ever waits on another. */
#define CACHE_SLOTS 4096
struct slot {
  _Atomic uint32_t seq;
  uint32_t gen; /* shim_modules_generation() when filled */
  uint64_t pc;
  struct uw_rule rule;
};
static struct slot cache[CACHE_SLOTS];

static struct slot* slot_of(uint64_t pc) {
  uint64_t h = pc * 0x9e3779b97f4a7c15ULL;
  return &cache[(h >> 40) % CACHE_SLOTS];
}

static void copy_expr(uint8_t* dst, const uint8_t* src, uint8_t len) {
  memcpy(dst, src, len < UW_EXPR_MAX ? len : UW_EXPR_MAX);
}

static int cache_get(uint64_t pc, uint32_t gen, struct uw_rule* out) {
  struct slot* s = slot_of(pc);
  uint32_t a = atomic_load_explicit(&s->seq, memory_order_acquire);
  if (a & 1) return 0;
  uint64_t key = s->pc;
  uint32_t g = s->gen;
  /* The fixed part, then only the expressions the rule uses (most use none): a torn read of a
   * length is bounded here and thrown away by the check of seq below. */
  memcpy(out, &s->rule, offsetof(struct uw_rule, cfa_expr));
  if (out->cfa_reg == 0xff) copy_expr(out->cfa_expr, s->rule.cfa_expr, out->cfa_len);
  if (out->ra_rule == UW_R_EXPR_ADDR) copy_expr(out->ra_expr, s->rule.ra_expr, out->ra_len);
  if (out->bp_rule == UW_R_EXPR_ADDR) copy_expr(out->bp_expr, s->rule.bp_expr, out->bp_len);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->seq, memory_order_relaxed) != a) return 0;
  return a != 0 && key == pc && g == gen;
}

static void cache_put(uint64_t pc, uint32_t gen, const struct uw_rule* r) {
  struct slot* s = slot_of(pc);
  uint32_t a = atomic_load_explicit(&s->seq, memory_order_relaxed);
  if ((a & 1) || !atomic_compare_exchange_strong(&s->seq, &a, a + 1)) return;
  s->pc = pc;
  s->gen = gen;
  s->rule = *r;
  atomic_store_explicit(&s->seq, a + 2, memory_order_release);
}

/* ---- the walk ---- */

struct regs {
  uint64_t pc, sp, bp;
  int bp_known;
  uint64_t bp_at; /* the stack word bp was loaded from; 0: the register at the start */
};

/* The last walks of this thread (MEMOS of them), replayed when nothing one depended on changed. A
 * walk is a pure function of its start (stack pointer, frame pointer, top of the stack), the rules
 * of the PCs it meets (the same while the module generation is) and the stack words it reads: when
 * those words still hold what they held, every step goes as it went and the frames are the same.
 * Checking them is independent loads, where the walk is a chain of dependent ones (the slot of a
 * PC, the return address its rule finds, the slot of that), so a repeated stack (a polling loop,
 * the same calls made again in turn) costs a few compares instead of a walk. Only walks that end
 * without an error text of their own are kept (say() writes a per-thread buffer that a later walk
 * reuses).
 *
 * A frame pointer restored from a frame is noted only when a later step uses it (a frame whose
 * CFA is rbp-based): most code keeps loop counters and pointers in rbp, which the frames below
 * save, and a memo keyed on them would never match. The same holds for rbp at the start. */
#define MEMOS 4
#define MEMO_WORDS 64
struct memo {
  int valid;
  uint32_t gen;
  uint64_t sp, hi;
  int uses_bp;       /* the walk used rbp as it was at the start: bp must match */
  uint64_t bp;       /* that rbp */
  uint64_t bp_noted; /* the last restored-rbp word noted (not noted twice) */
  int nwords;        /* MEMO_WORDS + 1: the walk read more than the memo holds */
  uint64_t addr[MEMO_WORDS], val[MEMO_WORDS];
  int nframes;
  const char* error; /* a static text, or NULL */
  uint64_t frames[SHIM_MAX_FRAMES];
};
static __thread struct memos {
  struct memo m[MEMOS];
  unsigned next; /* the one a new walk replaces (in turn) */
} memos __attribute__((tls_model("initial-exec")));

struct bounds {
  uint64_t lo, hi; /* words are read only in [lo, hi): from the stack pointer to the top */
  struct memo* m;  /* where the words read are noted, or NULL */
};

static void note(struct memo* m, uint64_t addr, uint64_t val) {
  if (m == NULL) return;
  if (m->nwords < MEMO_WORDS) {
    m->addr[m->nwords] = addr;
    m->val[m->nwords] = val;
  }
  if (m->nwords <= MEMO_WORDS) ++m->nwords;
}

/* A stack word the walk depends on (noted); read_bp_word: one it may not (noted if used). */
static int read_bp_word(const struct bounds* b, uint64_t addr, uint64_t* out) {
  if (addr < b->lo || addr >= b->hi || b->hi - addr < 8) return 0;
  memcpy(out, (const void*)(uintptr_t)addr, 8);
  return 1;
}

static int read_word(const struct bounds* b, uint64_t addr, uint64_t* out) {
  if (!read_bp_word(b, addr, out)) return 0;
  note(b->m, addr, *out);
  return 1;
}

/* The walk is about to use r->bp: it now depends on where that came from. */
static void use_bp(const struct regs* r, const struct bounds* b) {
  struct memo* m = b->m;
  if (m == NULL) return;
  if (r->bp_at == 0) {
    m->uses_bp = 1;
  } else if (m->bp_noted != r->bp_at) {
    m->bp_noted = r->bp_at;
    note(m, r->bp_at, r->bp);
  }
}

static int memo_matches(const struct memo* m, uint64_t sp, uint64_t bp, uint64_t hi, uint32_t gen) {
  if (!m->valid || m->sp != sp || m->hi != hi || m->gen != gen) return 0;
  if (m->uses_bp && m->bp != bp) return 0;
  /* In the order the walk read them, innermost first: where another stack differs, it mostly
   * differs early (the return address into the function that made the call). */
  for (int i = 0; i < m->nwords; ++i) {
    uint64_t v;
    memcpy(&v, (const void*)(uintptr_t)m->addr[i], 8); /* in [sp, hi): checked when noted */
    if (v != m->val[i]) return 0;
  }
  return 1;
}

/* A DWARF expression of a CFI rule (DWARF 4 section 2.5): the operations GCC and the linkers emit
 * for x86-64 (PLT entries, realigned frames); 0 when it uses anything else or a read fails. A
 * register's save-location expression (DW_CFA_expression) starts with the CFA on the stack
 * (DWARF 4 section 6.4.2.3); `cfa` is then non-null. */
static int eval(const uint8_t* e, unsigned len, const struct regs* r, const struct bounds* b,
                const uint64_t* cfa, uint64_t* out) {
  uint64_t st[16];
  int n = 0;
  if (cfa != NULL) st[n++] = *cfa;
  for (unsigned i = 0; i < len;) {
    uint8_t op = e[i++];
    if (op >= 0x70 && op <= 0x8f) { /* DW_OP_breg<N> sleb */
      int64_t off = 0;
      unsigned shift = 0;
      uint8_t byte;
      do {
        if (i >= len || shift > 56) return 0;
        byte = e[i++];
        off |= (int64_t)(byte & 0x7f) << shift;
        shift += 7;
      } while (byte & 0x80);
      if (byte & 0x40) off |= -((int64_t)1 << shift);
      unsigned reg = op - 0x70u;
      uint64_t v;
      if (reg == 7) {
        v = r->sp;
      } else if (reg == 6 && r->bp_known) {
        use_bp(r, b);
        v = r->bp;
      } else if (reg == 16) {
        v = r->pc;
      } else {
        return 0;
      }
      if (n == 16) return 0;
      st[n++] = v + (uint64_t)off;
    } else if (op >= 0x30 && op <= 0x4f) { /* DW_OP_lit<N> */
      if (n == 16) return 0;
      st[n++] = op - 0x30u;
    } else if (op == 0x06) { /* deref */
      if (n < 1 || !read_word(b, st[n - 1], &st[n - 1])) return 0;
    } else if (op == 0x23) { /* plus_uconst */
      uint64_t v = 0;
      unsigned shift = 0;
      uint8_t byte;
      do {
        if (i >= len || shift > 63) return 0;
        byte = e[i++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
      } while (byte & 0x80);
      if (n < 1) return 0;
      st[n - 1] += v;
    } else if (op == 0x1a || op == 0x22 || op == 0x1c || op == 0x24 || op == 0x2a) {
      if (n < 2) return 0;
      uint64_t y = st[--n], x = st[n - 1];
      switch (op) {
        case 0x1a:
          x &= y;
          break; /* and */
        case 0x22:
          x += y;
          break; /* plus */
        case 0x1c:
          x -= y;
          break; /* minus */
        case 0x24:
          x = y < 64 ? x << y : 0;
          break; /* shl */
        default:
          x = (int64_t)x >= (int64_t)y ? 1 : 0;
          break; /* ge */
      }
      st[n - 1] = x;
    } else {
      return 0;
    }
  }
  if (n < 1) return 0;
  *out = st[n - 1];
  return 1;
}

static __thread char error_text[80] __attribute__((tls_model("initial-exec")));
static const char kHex[] = "0123456789abcdef";

static const char* say(const char* what, uint64_t addr) {
  size_t n = strlen(what);
  if (n > 48) n = 48;
  memcpy(error_text, what, n);
  error_text[n++] = '0';
  error_text[n++] = 'x';
  char tmp[16];
  int k = 0;
  do {
    tmp[k++] = kHex[addr & 15];
    addr >>= 4;
  } while (addr != 0);
  while (k > 0) error_text[n++] = tmp[--k];
  error_text[n] = '\0';
  return error_text;
}

/* One step: from the frame at r (whose rule is `rule`) to its caller; 0 with *why when it stops. */
static int step(struct regs* r, const struct uw_rule* rule, const struct bounds* b,
                const char** why) {
  uint64_t cfa;
  if (rule->cfa_reg == 0xff) {
    if (!eval(rule->cfa_expr, rule->cfa_len, r, b, NULL, &cfa)) {
      *why = say("unwind expression failed at ", r->pc);
      return 0;
    }
  } else if (rule->cfa_reg == 6) {
    if (!r->bp_known) {
      *why = say("frame pointer unknown at ", r->pc);
      return 0;
    }
    use_bp(r, b);
    cfa = r->bp + (uint64_t)(int64_t)rule->cfa_off;
  } else {
    cfa = r->sp + (uint64_t)(int64_t)rule->cfa_off;
  }
  /* The caller's frame lies above this one: a CFA that does not grow is damage. */
  if (cfa <= r->sp || cfa > b->hi) {
    *why = say("unreadable stack at ", cfa);
    return 0;
  }
  uint64_t ra_at = rule->ra_rule == UW_R_OFFSET ? cfa + (uint64_t)(int64_t)rule->ra_off : 0;
  struct regs in = *r;
  if (rule->ra_rule == UW_R_EXPR_ADDR && !eval(rule->ra_expr, rule->ra_len, &in, b, &cfa, &ra_at)) {
    *why = say("unwind expression failed at ", r->pc);
    return 0;
  }
  uint64_t ra;
  if (!read_word(b, ra_at, &ra)) {
    *why = say("unreadable stack at ", ra_at);
    return 0;
  }
  switch (rule->bp_rule) {
    case UW_R_OFFSET: {
      uint64_t bp, at = cfa + (uint64_t)(int64_t)rule->bp_off;
      if (!read_bp_word(b, at, &bp)) {
        *why = say("unreadable stack at ", at);
        return 0;
      }
      r->bp = bp;
      r->bp_at = at;
      break;
    }
    case UW_R_EXPR_ADDR: {
      uint64_t at, bp;
      if (eval(rule->bp_expr, rule->bp_len, &in, b, &cfa, &at) && read_bp_word(b, at, &bp)) {
        r->bp = bp;
        r->bp_at = at;
      } else {
        r->bp_known = 0;
      }
      break;
    }
    case UW_R_UNKNOWN:
      r->bp_known = 0;
      break;
    default:
      break;
  }
  r->sp = cfa;
  r->pc = ra;
  return 1;
}

/* The walk from r, filling ev; returns 1 when its end is one the memo may keep. */
static int walk(struct shim_event* ev, struct regs r, const struct bounds* b, uint32_t gen) {
  uint64_t self_lo, self_hi;
  shim_self_range(&self_lo, &self_hi);
  int exact = 1; /* the first PC is where this function is, not a return address */
  for (int steps = 0; steps < 256; ++steps) {
    if (r.pc == 0) return 1; /* a zero return address ends the stack (thread entry points) */
    int in_self = r.pc >= self_lo && r.pc < self_hi;
    if (!in_self) {
      if (ev->nframes == SHIM_MAX_FRAMES) {
        ev->stack_error = "frame limit 32";
        return 1;
      }
      ev->frames[ev->nframes++] = r.pc;
    }
    uint64_t lookup = exact ? r.pc : r.pc - 1;
    struct uw_rule rule;
    if (!cache_get(lookup, gen, &rule)) {
      shim_find_rule(r.pc, lookup, &rule);
      cache_put(lookup, shim_modules_generation(), &rule);
    }
    switch (rule.kind) {
      case UW_NORMAL:
        break;
      case UW_END:
        return 1;
      case UW_SIGNAL:
        ev->stack_error = "signal frame";
        return 1;
      case UW_NO_INFO:
        ev->stack_error = say("no unwind information for ", r.pc);
        return 0;
      case UW_UNSUPPORTED:
        ev->stack_error = say("unsupported unwind rule at ", r.pc);
        return 0;
      default:
        ev->stack_error = say("damaged unwind information at ", r.pc);
        return 0;
    }
    if (!step(&r, &rule, b, &ev->stack_error)) return 0;
    exact = 0;
  }
  ev->stack_error = "frame limit 32";
  return 1;
}

void shim_capture_stack(struct shim_event* ev) {
  ev->nframes = 0;
  ev->stack_error = NULL;
  if (shim_ctl == NULL || !__atomic_load_n(&shim_ctl->stacks, __ATOMIC_RELAXED)) return;
  struct regs r;
  __asm__ volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(r.pc), "=r"(r.sp), "=r"(r.bp));
  r.bp_known = 1;
  r.bp_at = 0;
  struct bounds b;
  if (!rt_stack_range(r.sp, &b.lo, &b.hi)) {
    ev->stack_error = say("unreadable stack at ", r.sp);
    return;
  }
  b.lo = r.sp;
  shim_modules_check(0);
  uint32_t gen = shim_modules_generation();
  struct memos* all = &memos;
  for (int i = 0; i < MEMOS; ++i) {
    const struct memo* m = &all->m[i];
    if (memo_matches(m, r.sp, r.bp, b.hi, gen)) {
      ev->nframes = m->nframes;
      ev->stack_error = m->error;
      memcpy(ev->frames, m->frames, sizeof(uint64_t) * (size_t)m->nframes);
      return;
    }
  }
  struct memo* m = &all->m[all->next++ % MEMOS];
  m->valid = 0;
  m->nwords = 0;
  m->uses_bp = 0;
  m->bp_noted = 0;
  b.m = m;
  int keep = walk(ev, r, &b, gen);
  if (keep && m->nwords <= MEMO_WORDS && shim_modules_generation() == gen) {
    m->gen = gen;
    m->sp = r.sp;
    m->bp = r.bp;
    m->hi = b.hi;
    m->nframes = ev->nframes;
    m->error = ev->stack_error;
    memcpy(m->frames, ev->frames, sizeof(uint64_t) * (size_t)ev->nframes);
    m->valid = 1;
  }
}
