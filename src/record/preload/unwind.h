/*
 * Call stacks in the preload shim (docs/tracing.md, "Call stacks"): an unwinder driven by the
 * .eh_frame of the loaded objects, with a per-PC cache of unwind rules, and the module records of
 * the process (docs/trace-format.md, "Module records").
 *
 * Plain C inside arbitrary programs, as the rest of the shim (shim.h): no allocation, no lock a
 * signal handler of the same thread could want (the shim's `busy` flag keeps a handler out of
 * the recorder), and every read of the program's memory is checked first: stack words only inside
 * the calling thread's stack mapping, unwind tables only inside the readable PT_LOAD segments of
 * their object, read while dl_iterate_phdr holds the loader's lock (no dlclose can unmap them).
 * A stack that cannot be unwound (no unwind information, a signal frame, a frame whose CFA leaves
 * the stack, unsupported CFI) ends with a reason in `stack_error`; it never faults.
 */
#ifndef CUDATOOL_PRELOAD_UNWIND_H
#define CUDATOOL_PRELOAD_UNWIND_H

#include <stdint.h>

#include "shim.h"

/* Fills ev->frames, ev->nframes and ev->stack_error with the stack of the call in progress,
 * innermost first, starting at the first frame outside the shim (the return address into the
 * program's code that called the interposed function), and writes the module record of every
 * object a frame lies in that this process has not written yet. A no-op unless the recording
 * asked for stacks. */
SHIM_HIDDEN void shim_capture_stack(struct shim_event* ev);

/* ---- shared by unwind.c, modules.c, eh_frame.c and module_bounds.c (each calling only those
 * after it in that list) ---- */

/* How to find the caller's frame from a frame at one PC (the result of its CFI), cached per PC. */
enum uw_kind {
  UW_NORMAL,      /* CFA = reg + off (or an expression); RA and rbp as the rules say */
  UW_END,         /* the return address is undefined: the outermost frame (_start, clone) */
  UW_SIGNAL,      /* a signal trampoline: the stack stops here (an ioctl of a handler) */
  UW_NO_INFO,     /* no FDE covers the PC (or no object holds it) */
  UW_UNSUPPORTED, /* CFI this unwinder does not follow (a CFA on another register, …) */
  UW_BAD_CFI      /* unwind data that cannot be read (out of bounds, bad encoding) */
};

enum uw_rule_kind { UW_R_SAME, UW_R_OFFSET, UW_R_EXPR_ADDR, UW_R_UNKNOWN };

/* DWARF expressions are copied into the rule (PLT entries: 11 bytes; a realigned frame's CFA:
 * 3), so that a cached rule never reads the object's memory again. */
#define UW_EXPR_MAX 24

struct uw_rule {
  uint8_t kind;    /* enum uw_kind */
  uint8_t cfa_reg; /* 6 (rbp) or 7 (rsp); 0xff: cfa_expr */
  uint8_t bp_rule; /* enum uw_rule_kind, for rbp */
  uint8_t ra_rule; /* UW_R_OFFSET, or UW_R_EXPR_ADDR */
  int32_t cfa_off;
  int32_t ra_off, bp_off;
  uint8_t cfa_len, ra_len, bp_len;
  uint8_t cfa_expr[UW_EXPR_MAX], ra_expr[UW_EXPR_MAX], bp_expr[UW_EXPR_MAX];
};

/* The rule for `pc` (looked up at `lookup`, pc - 1 for return addresses), from the object that
 * holds it (modules.c, under the loader's lock). Also makes sure the object's module record is
 * written. Returns the rule's kind. */
SHIM_HIDDEN int shim_find_rule(uint64_t pc, uint64_t lookup, struct uw_rule* rule);
/* The [lo, hi) of this shim's own code (frames in it are not recorded). */
SHIM_HIDDEN void shim_self_range(uint64_t* lo, uint64_t* hi);
/* Bumped when a scan finds that an object was unloaded: cached rules older than it are stale. */
SHIM_HIDDEN uint32_t shim_modules_generation(void);
/* Rescans the loaded objects when the set may have changed (dl_iterate_phdr's dlpi_adds and
 * dlpi_subs; looked at every few milliseconds, or at once when `force`: a PC in an object without
 * a record); writes the records of new ones. */
SHIM_HIDDEN void shim_modules_check(int force);
/* Reads len bytes of an object's unwind data at addr, inside the bounds set for the object being
 * searched (module_bounds.c): 0 outside them. */
SHIM_HIDDEN int shim_module_read(uint64_t addr, void* out, uint64_t len);
struct dl_phdr_info;
/* Sets the bounds to the readable PT_LOAD segments of `info` (in a dl_iterate_phdr callback). */
SHIM_HIDDEN void shim_module_bounds_set(const struct dl_phdr_info* info);
SHIM_HIDDEN void shim_module_bounds_clear(void);
/* Evaluates the CFI of the FDE for `lookup` (eh_frame.c): fde at address `fde` in an object whose
 * readable ranges shim_module_read checks. */
SHIM_HIDDEN int uw_rule_from_fde(uint64_t fde, uint64_t lookup, struct uw_rule* rule);
/* The FDE for `lookup` from the .eh_frame_hdr at `hdr` (binary search), or by walking .eh_frame
 * when the table cannot be searched; 0 when none covers it. */
SHIM_HIDDEN uint64_t uw_find_fde(uint64_t hdr, uint64_t lookup);

#endif /* CUDATOOL_PRELOAD_UNWIND_H */
