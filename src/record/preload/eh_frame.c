/* The preload unwinder's reading of .eh_frame_hdr and .eh_frame, in the memory of a loaded object
 * (unwind.h). Layouts: LSB 5.0 "Exception Frames" (.eh_frame, CIE/FDE augmentations), "DWARF
 * Exception Header Encoding" (DW_EH_PE_*), ".eh_frame_hdr"; DWARF 4 section 6.4 (call frame
 * instructions) and 2.5 (expressions); x86-64 psABI 3.6 (register numbers: 6 rbp, 7 rsp, 16 RA).
 * Every byte is read through shim_module_read, which checks it lies in a readable segment of the
 * object. */
#include <string.h>

#include "unwind.h"

#define DW_EH_PE_omit 0xff

/* A cursor over object memory; `err` sticks. */
struct cur {
  uint64_t p, end;
  int err;
};

static uint8_t get_u8(struct cur* c) {
  uint8_t v = 0;
  if (c->err || c->p >= c->end || !shim_module_read(c->p, &v, 1)) {
    c->err = 1;
    return 0;
  }
  ++c->p;
  return v;
}

static uint64_t get_n(struct cur* c, unsigned n) {
  uint64_t v = 0;
  if (c->err || n > c->end - c->p || c->p > c->end || !shim_module_read(c->p, &v, n)) {
    c->err = 1;
    return 0;
  }
  c->p += n;
  return v; /* little-endian: the low n bytes */
}

static uint64_t get_uleb(struct cur* c) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    uint8_t b = get_u8(c);
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  c->err = 1;
  return 0;
}

static int64_t get_sleb(struct cur* c) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b = 0;
  do {
    if (shift >= 64) {
      c->err = 1;
      return 0;
    }
    b = get_u8(c);
    v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}

static int64_t sext(uint64_t v, unsigned bytes) {
  unsigned bits = 8 * bytes;
  return bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* A DW_EH_PE-encoded pointer; `datarel` is the base of DW_EH_PE_datarel (.eh_frame_hdr). */
static uint64_t get_ptr(struct cur* c, uint8_t enc, uint64_t datarel) {
  if (enc == DW_EH_PE_omit) return 0;
  uint64_t at = c->p, v = 0;
  switch (enc & 0x0f) {
    case 0x00:
      v = get_n(c, 8);
      break;
    case 0x01:
      v = get_uleb(c);
      break;
    case 0x02:
      v = get_n(c, 2);
      break;
    case 0x03:
      v = get_n(c, 4);
      break;
    case 0x04:
      v = get_n(c, 8);
      break;
    case 0x09:
      v = (uint64_t)get_sleb(c);
      break;
    case 0x0a:
      v = (uint64_t)sext(get_n(c, 2), 2);
      break;
    case 0x0b:
      v = (uint64_t)sext(get_n(c, 4), 4);
      break;
    case 0x0c:
      v = get_n(c, 8);
      break;
    default:
      c->err = 1;
      return 0;
  }
  switch (enc & 0x70) {
    case 0x00:
      break;
    case 0x10:
      v += at;
      break; /* pcrel */
    case 0x30:
      v += datarel;
      break; /* datarel */
    default:
      c->err = 1;
      return 0; /* textrel, funcrel, aligned: not used on x86-64 */
  }
  if (enc & 0x80) c->err = 1; /* indirect: only personality pointers, which are skipped */
  return v;
}

/* ---- .eh_frame_hdr ---- */

struct fde_info {
  uint64_t cie, pc_begin, pc_range;
  uint64_t insns, insns_end;
  /* from the CIE */
  uint64_t cie_insns, cie_insns_end;
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  int signal;
  int has_z; /* the CIE's augmentation starts with 'z': FDEs carry an augmentation length */
};

/* The record at `at`: its length and where its body starts. */
static int record(uint64_t at, uint64_t* body, uint64_t* end) {
  struct cur c = {at, at + 12, 0};
  uint64_t len = get_n(&c, 4);
  if (len == 0xffffffffu) len = get_n(&c, 8);
  if (c.err || len == 0 || len > ((uint64_t)1 << 32)) return 0;
  *body = c.p;
  *end = c.p + len;
  return *end > c.p;
}

static int read_cie(uint64_t at, struct fde_info* f) {
  uint64_t body, end;
  if (!record(at, &body, &end)) return 0;
  struct cur c = {body, end, 0};
  if (get_n(&c, 4) != 0) return 0; /* CIE id */
  uint8_t version = get_u8(&c);
  if (version != 1 && version != 3 && version != 4) return 0;
  char aug[16] = {0};
  int n = 0;
  for (;;) {
    uint8_t ch = get_u8(&c);
    if (c.err || n == (int)sizeof aug - 1) return 0;
    aug[n++] = (char)ch;
    if (ch == 0) break;
  }
  if (aug[0] == 'e' && aug[1] == 'h') get_n(&c, 8); /* GCC 2.x eh pointer */
  if (version == 4) {
    get_u8(&c); /* address size */
    get_u8(&c); /* segment selector size */
  }
  f->code_align = get_uleb(&c);
  f->data_align = get_sleb(&c);
  f->ra_reg = version == 1 ? get_u8(&c) : get_uleb(&c);
  f->fde_enc = 0x00;
  f->signal = 0;
  f->has_z = aug[0] == 'z';
  uint64_t aug_end = 0;
  int skipped = 0; /* an unknown augmentation: the rest is skipped by its length */
  for (int i = 0; aug[i] != 0 && !c.err && !skipped; ++i) {
    switch (aug[i]) {
      case 'z':
        aug_end = get_uleb(&c);
        aug_end += c.p;
        break;
      case 'R':
        f->fde_enc = get_u8(&c);
        break;
      case 'L':
        get_u8(&c);
        break;
      case 'P': {
        uint8_t enc = get_u8(&c);
        get_ptr(&c, (uint8_t)(enc & 0x7f), 0); /* skipped (its indirection is not followed) */
        break;
      }
      case 'S':
        f->signal = 1;
        break;
      case 'B':
      case 'G':
      case 'e':
      case 'h':
        break;
      default:
        if (aug_end == 0) return 0; /* unknown augmentation without 'z': cannot go on */
        c.p = aug_end;              /* the rest is skipped by length, as libgcc does */
        skipped = 1;
        break;
    }
  }
  if (aug_end != 0) c.p = aug_end;
  if (c.err || c.p > end) return 0;
  f->cie_insns = c.p;
  f->cie_insns_end = end;
  return 1;
}

/* The FDE at `at`, with its CIE; 0 when it cannot be read (or is a CIE). */
static int read_fde(uint64_t at, struct fde_info* f) {
  uint64_t body, end;
  if (!record(at, &body, &end)) return 0;
  struct cur c = {body, end, 0};
  uint64_t cie_ptr = get_n(&c, 4);
  if (c.err || cie_ptr == 0 || cie_ptr > body) return 0;
  f->cie = body - cie_ptr;
  if (!read_cie(f->cie, f)) return 0;
  f->pc_begin = get_ptr(&c, f->fde_enc, 0);
  f->pc_range = get_ptr(&c, (uint8_t)(f->fde_enc & 0x0f), 0);
  if (f->has_z) {
    uint64_t aug_len = get_uleb(&c);
    if (aug_len > end - c.p) return 0;
    c.p += aug_len;
  }
  if (c.err || c.p > end) return 0;
  f->insns = c.p;
  f->insns_end = end;
  return 1;
}

/* Walks .eh_frame from its start (a table-less or unsearchable .eh_frame_hdr). */
static uint64_t walk_eh_frame(uint64_t eh, uint64_t lookup) {
  uint64_t at = eh;
  for (int i = 0; i < (1 << 20); ++i) {
    uint64_t body, end;
    if (!record(at, &body, &end)) return 0; /* a terminator or damage */
    struct fde_info f;
    struct cur c = {body, end, 0};
    if (get_n(&c, 4) != 0 && read_fde(at, &f) && lookup >= f.pc_begin &&
        lookup - f.pc_begin < f.pc_range) {
      return at;
    }
    at = end;
  }
  return 0;
}

uint64_t uw_find_fde(uint64_t hdr, uint64_t lookup) {
  struct cur c = {hdr, hdr + 4096, 0};
  uint8_t version = get_u8(&c), ptr_enc = get_u8(&c), count_enc = get_u8(&c),
          table_enc = get_u8(&c);
  if (c.err || version != 1) return 0;
  uint64_t eh = get_ptr(&c, ptr_enc, hdr);
  if (c.err) return 0;
  uint64_t count = count_enc == DW_EH_PE_omit ? 0 : get_ptr(&c, count_enc, hdr);
  if (c.err || count == 0 || table_enc != 0x3b) return walk_eh_frame(eh, lookup);
  /* datarel sdata4 pairs (initial location, FDE address), sorted by location. */
  uint64_t table = c.p, lo = 0, hi = count;
  if (count > (1u << 26)) return 0;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    struct cur e = {table + 8 * mid, table + 8 * mid + 4, 0};
    uint64_t loc = get_ptr(&e, 0x3b, hdr);
    if (e.err) return 0;
    if (loc <= lookup) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  struct cur e = {table + 8 * lo, table + 8 * lo + 8, 0};
  uint64_t loc = get_ptr(&e, 0x3b, hdr);
  uint64_t fde = get_ptr(&e, 0x3b, hdr);
  if (e.err || loc > lookup) return 0;
  struct fde_info f;
  if (!read_fde(fde, &f) || lookup < f.pc_begin || lookup - f.pc_begin >= f.pc_range) return 0;
  return fde;
}

/* ---- call frame instructions ---- */

struct reg_rule {
  uint8_t kind; /* enum uw_rule_kind */
  int64_t off;
  uint64_t expr;
  uint64_t expr_len;
};

struct cfa_state {
  uint64_t cfa_reg;
  int64_t cfa_off;
  uint64_t cfa_expr, cfa_expr_len;
  struct reg_rule bp, ra;
};

/* A factored offset (DWARF 4 section 6.4.2): the product wraps as the unsigned one does, so that
 * a hostile table gives a wrong offset (refused later as out of range or off the stack), never
 * signed overflow. */
static int64_t factored(uint64_t v, int64_t align) {
  return (int64_t)(v * (uint64_t)align);
}

static void set_rule(struct cfa_state* s, uint64_t reg, uint64_t ra_reg, struct reg_rule r) {
  if (reg == 6) s->bp = r;
  if (reg == ra_reg) s->ra = r;
}

/* A rule-setting instruction of the extended set (DWARF 4 section 6.4.2.3): 1 done, 0 damage,
 * -1 not one of them. */
static int reg_op(struct cfa_state* s, const struct cfa_state* init, const struct fde_info* f,
                  struct cur* c, uint8_t op) {
  uint64_t reg = 0;
  switch (op) {
    case 0x05: /* offset_extended */
      reg = get_uleb(c);
      set_rule(s, reg, f->ra_reg,
               (struct reg_rule){UW_R_OFFSET, factored(get_uleb(c), f->data_align), 0, 0});
      return 1;
    case 0x06: /* restore_extended */
      reg = get_uleb(c);
      if (init != NULL) set_rule(s, reg, f->ra_reg, reg == 6 ? init->bp : init->ra);
      return 1;
    case 0x07: /* undefined */
      set_rule(s, get_uleb(c), f->ra_reg, (struct reg_rule){UW_R_UNKNOWN, 0, 0, 0});
      return 1;
    case 0x08: /* same_value */
      set_rule(s, get_uleb(c), f->ra_reg, (struct reg_rule){UW_R_SAME, 0, 0, 0});
      return 1;
    case 0x09: /* register: the value lives in another register */
      reg = get_uleb(c);
      get_uleb(c);
      set_rule(s, reg, f->ra_reg, (struct reg_rule){UW_R_UNKNOWN, 0, 0, 0});
      return 1;
    case 0x10: { /* expression: saved at the address it computes */
      reg = get_uleb(c);
      uint64_t len = get_uleb(c);
      if (len > c->end - c->p) return 0;
      set_rule(s, reg, f->ra_reg, (struct reg_rule){UW_R_EXPR_ADDR, 0, c->p, len});
      c->p += len;
      return 1;
    }
    case 0x11: /* offset_extended_sf */
      reg = get_uleb(c);
      set_rule(
          s, reg, f->ra_reg,
          (struct reg_rule){UW_R_OFFSET, factored((uint64_t)get_sleb(c), f->data_align), 0, 0});
      return 1;
    case 0x14: /* val_offset: the value is CFA + off, not saved */
    case 0x15:
    case 0x16: { /* val_expression */
      reg = get_uleb(c);
      if (op == 0x14) get_uleb(c);
      if (op == 0x15) get_sleb(c);
      if (op == 0x16) {
        uint64_t len = get_uleb(c);
        if (len > c->end - c->p) return 0;
        c->p += len;
      }
      set_rule(s, reg, f->ra_reg, (struct reg_rule){UW_R_UNKNOWN, 0, 0, 0});
      return 1;
    }
    case 0x2f: /* GNU_negative_offset_extended */
      reg = get_uleb(c);
      set_rule(s, reg, f->ra_reg,
               (struct reg_rule){UW_R_OFFSET, factored(0 - get_uleb(c), f->data_align), 0, 0});
      return 1;
    default:
      return -1;
  }
}

/* A CFA-defining instruction (DWARF 4 section 6.4.2.2): 1 done, 0 damage, -1 not one of them. */
static int cfa_op(struct cfa_state* s, const struct fde_info* f, struct cur* c, uint8_t op) {
  switch (op) {
    case 0x0c: /* def_cfa */
      s->cfa_reg = get_uleb(c);
      s->cfa_off = (int64_t)get_uleb(c);
      s->cfa_expr = 0;
      return 1;
    case 0x0d:
      s->cfa_reg = get_uleb(c);
      s->cfa_expr = 0;
      return 1;
    case 0x0e:
      s->cfa_off = (int64_t)get_uleb(c);
      return 1;
    case 0x0f: /* def_cfa_expression */
      s->cfa_expr_len = get_uleb(c);
      s->cfa_expr = c->p;
      if (s->cfa_expr_len > c->end - c->p) return 0;
      c->p += s->cfa_expr_len;
      return 1;
    case 0x12:
      s->cfa_reg = get_uleb(c);
      s->cfa_off = factored((uint64_t)get_sleb(c), f->data_align);
      s->cfa_expr = 0;
      return 1;
    case 0x13:
      s->cfa_off = factored((uint64_t)get_sleb(c), f->data_align);
      return 1;
    default:
      return -1;
  }
}

/* Runs [p, end) until the location passes `lookup`; 0 on damage. */
static int run(struct cfa_state* s, const struct cfa_state* init, const struct fde_info* f,
               uint64_t p, uint64_t end, uint64_t* loc, uint64_t lookup) {
  struct cfa_state saved[8];
  int nsaved = 0;
  struct cur c = {p, end, 0};
  for (int steps = 0; c.p < end && steps < 100000; ++steps) {
    uint8_t op = get_u8(&c);
    uint64_t advance = 0, reg = 0;
    if (c.err) return 0;
    switch (op >> 6) {
      case 1:
        advance = op & 0x3f;
        break;
      case 2: {
        int64_t off = factored(get_uleb(&c), f->data_align);
        set_rule(s, op & 0x3f, f->ra_reg, (struct reg_rule){UW_R_OFFSET, off, 0, 0});
        continue;
      }
      case 3:
        reg = op & 0x3f;
        if (init != NULL) set_rule(s, reg, f->ra_reg, reg == 6 ? init->bp : init->ra);
        continue;
      default:
        break;
    }
    if (op >> 6 == 0) {
      int done = reg_op(s, init, f, &c, op);
      if (done < 0) done = cfa_op(s, f, &c, op);
      if (done == 0) return 0;
      if (done > 0) continue;
      switch (op) {
        case 0x00:
          continue; /* nop */
        case 0x01:
          *loc = get_ptr(&c, f->fde_enc, 0);
          if (*loc > lookup) return 1;
          continue;
        case 0x02:
          advance = get_n(&c, 1);
          break;
        case 0x03:
          advance = get_n(&c, 2);
          break;
        case 0x04:
          advance = get_n(&c, 4);
          break;
        case 0x0a:
          if (nsaved == 8) return 0;
          saved[nsaved++] = *s;
          continue;
        case 0x0b:
          if (nsaved == 0) return 0;
          *s = saved[--nsaved];
          continue;
        case 0x2e:
          get_uleb(&c);
          continue; /* GNU_args_size */
        default:
          return 0;
      }
    }
    if (c.err) return 0;
    uint64_t next = *loc + advance * f->code_align;
    if (next > lookup) return 1;
    *loc = next;
  }
  return !c.err;
}

/* Copies an expression into the rule; 0 when it does not fit or cannot be read. */
static int copy_expr(uint8_t* dst, uint8_t* len, uint64_t at, uint64_t n) {
  if (n == 0 || n > UW_EXPR_MAX || !shim_module_read(at, dst, n)) return 0;
  *len = (uint8_t)n;
  return 1;
}

int uw_rule_from_fde(uint64_t fde, uint64_t lookup, struct uw_rule* out) {
  struct fde_info f;
  memset(out, 0, sizeof *out);
  if (!read_fde(fde, &f)) return out->kind = UW_BAD_CFI;
  if (f.signal) return out->kind = UW_SIGNAL;
  struct cfa_state s;
  memset(&s, 0, sizeof s);
  s.cfa_reg = 7;
  s.bp.kind = UW_R_SAME;
  s.ra.kind = UW_R_UNKNOWN;
  uint64_t loc = f.pc_begin;
  if (!run(&s, NULL, &f, f.cie_insns, f.cie_insns_end, &loc, ~(uint64_t)0)) {
    return out->kind = UW_BAD_CFI;
  }
  struct cfa_state init = s;
  loc = f.pc_begin;
  if (!run(&s, &init, &f, f.insns, f.insns_end, &loc, lookup)) return out->kind = UW_BAD_CFI;
  if (s.ra.kind == UW_R_UNKNOWN && f.ra_reg == 16) return out->kind = UW_END;
  if (s.cfa_expr != 0) {
    out->cfa_reg = 0xff;
    if (!copy_expr(out->cfa_expr, &out->cfa_len, s.cfa_expr, s.cfa_expr_len)) {
      return out->kind = UW_UNSUPPORTED;
    }
  } else if (s.cfa_reg == 6 || s.cfa_reg == 7) {
    out->cfa_reg = (uint8_t)s.cfa_reg;
  } else {
    return out->kind = UW_UNSUPPORTED;
  }
  if (s.cfa_off < INT32_MIN || s.cfa_off > INT32_MAX) return out->kind = UW_UNSUPPORTED;
  out->cfa_off = (int32_t)s.cfa_off;
  if (s.ra.off < INT32_MIN || s.ra.off > INT32_MAX || s.bp.off < INT32_MIN ||
      s.bp.off > INT32_MAX) {
    return out->kind = UW_UNSUPPORTED;
  }
  out->ra_rule = s.ra.kind;
  out->ra_off = (int32_t)s.ra.off;
  if (s.ra.kind == UW_R_EXPR_ADDR &&
      !copy_expr(out->ra_expr, &out->ra_len, s.ra.expr, s.ra.expr_len)) {
    return out->kind = UW_UNSUPPORTED;
  }
  if (s.ra.kind != UW_R_OFFSET && s.ra.kind != UW_R_EXPR_ADDR) return out->kind = UW_UNSUPPORTED;
  out->bp_rule = s.bp.kind;
  out->bp_off = (int32_t)s.bp.off;
  if (s.bp.kind == UW_R_EXPR_ADDR &&
      !copy_expr(out->bp_expr, &out->bp_len, s.bp.expr, s.bp.expr_len)) {
    out->bp_rule = UW_R_UNKNOWN; /* rbp is then not known in the caller */
  }
  return out->kind = UW_NORMAL;
}
