/* Internals of the function recorder (funcrec.h), shared by its C files. */
#ifndef CUDATOOL_FUNCREC_INT_H
#define CUDATOOL_FUNCREC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "funcrec.h"
#include "funcrec_abi.h"

/* The shim runtime's header-only pieces: raw system calls (rt_sys6, RT_SYS, RT_FAILED) and the
 * clock (rt_now_ns). Only those: the recorder is linked into programs without the runtime's C
 * file too (tests/fixtures/funcrec), so it keeps its own per-thread state and needs no lock. */
#include "shim_rt.h"

#define FR_HIDDEN RT_HIDDEN

/* Anonymous private memory, or NULL. */
FR_HIDDEN void* fr_map_anon(uint64_t len);

/* ---- the installed plan (funcrec_install.c) ---- */
#define FR_STUB_SIZE                                                     \
  64u /* per function in the trampoline region; the first slot holds the \
         address of fr_entry_common */
struct fr_global {
  const struct fr_plan_header* plan;
  const struct fr_plan_site* sites;
  uint32_t nsites;
  struct fr_spool_header* spool;
  int spool_fd;
  uint8_t* region; /* trampolines: [0, 8) &fr_entry_common, then FR_STUB_SIZE per site */
  uint64_t region_len;
  uint32_t table; /* this image's install in spool->tables */
  int installed;
  int ended; /* the process is exiting: nothing more is written */
};
FR_HIDDEN extern struct fr_global fr_g;

/* Where a site's moved instructions start in the trampoline region. */
static inline uint64_t fr_continuation(uint64_t number) {
  return (uint64_t)(fr_g.region + FR_STUB_SIZE * (number + 1) + 16);
}

/* The assembler side (funcrec_tramp.S). */
FR_HIDDEN void fr_entry_common(void);
FR_HIDDEN void fr_return_tramp(void);

/* Calls fn(arg) with the vector and x87 state saved around it: for the rare paths that must call
 * into libc (whose functions may use vector registers) from inside a hook. */
FR_HIDDEN void fr_fpu_safe_call(void (*fn)(void*), void* arg);
FR_HIDDEN void fr_fpu_probe(void);

/* A message on stderr (fd 2), by write(2). */
FR_HIDDEN void fr_say(const char* a, const char* b);

#endif /* CUDATOOL_FUNCREC_INT_H */
