/* shim_unwind_probe.h: the shim's eh_frame.c over an image, with shim_module_read bounded by it
 * (the role modules.c plays in the shim, where the bounds are the object's readable segments). */
#include "shim_unwind_probe.h"
#include "shim_probe_paint.h"

#include <string.h>

#include "../src/record/preload/unwind.h"

static uint64_t lo, hi;
static unsigned long reads;

int shim_module_read(uint64_t addr, void* out, uint64_t len) {
  ++reads;
  if (addr < lo || addr >= hi || len > hi - addr) return 0;
  memcpy(out, (const void*)(uintptr_t)addr, len);
  return 1;
}

static const char* check(const struct uw_rule* r) {
  if (r->kind > UW_BAD_CFI) return "rule kind out of range";
  if (r->kind != UW_NORMAL) return NULL;
  if (r->cfa_reg != 6 && r->cfa_reg != 7 && r->cfa_reg != 0xff) return "CFA register";
  if ((r->cfa_reg == 0xff) != (r->cfa_len > 0)) return "CFA expression without length";
  if (r->ra_rule != UW_R_OFFSET && r->ra_rule != UW_R_EXPR_ADDR) return "RA rule";
  if ((r->ra_rule == UW_R_EXPR_ADDR) != (r->ra_len > 0)) return "RA expression without length";
  if (r->bp_rule > UW_R_UNKNOWN) return "rbp rule";
  if (r->bp_rule == UW_R_EXPR_ADDR && r->bp_len == 0) return "rbp expression without length";
  if (r->cfa_len > UW_EXPR_MAX || r->ra_len > UW_EXPR_MAX || r->bp_len > UW_EXPR_MAX) {
    return "expression longer than the rule holds";
  }
  return NULL;
}

const char* shim_unwind_probe(const uint8_t* image, size_t n, uint64_t hdr, uint64_t lookup,
                              int* found, int* kind) {
  lo = (uint64_t)(uintptr_t)image;
  hi = lo + n;
  *found = 0;
  *kind = -1;
  reads = 0;
  paint_stack();
  uint64_t fde = uw_find_fde(hdr, lookup);
  /* Each read is at least a byte of an image of n bytes read at most a few times over (the
   * table's binary search, the walk of .eh_frame, the CIE once per FDE): far more means a loop. */
  if (reads > 64 * (unsigned long)n + 4096) return "uw_find_fde read without end";
  if (fde == 0) return NULL;
  if (fde < lo || fde >= hi) return "an FDE outside the object";
  *found = 1;
  struct uw_rule a, b;
  paint_stack();
  uw_rule_from_fde(fde, lookup, &a);
  paint_stack();
  uw_rule_from_fde(fde, lookup, &b);
  *kind = a.kind;
  if (memcmp(&a, &b, sizeof a) != 0) return "the same FDE gave two rules";
  return check(&a);
}
