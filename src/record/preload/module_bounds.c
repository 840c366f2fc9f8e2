/* The bounds of the object whose unwind data is being read (unwind.h): its readable PT_LOAD
 * segments, set inside a dl_iterate_phdr callback (modules.c), where the loader's lock keeps the
 * object mapped, and checked by every read of its .eh_frame (eh_frame.c). Per thread. */
#define _GNU_SOURCE
#include <link.h>
#include <string.h>

#include "unwind.h"

#define MAX_SEGS 16

static __thread struct {
  int n;
  uint64_t lo[MAX_SEGS], hi[MAX_SEGS];
} cur_segs __attribute__((tls_model("initial-exec")));

int shim_module_read(uint64_t addr, void* out, uint64_t len) {
  for (int i = 0; i < cur_segs.n; ++i) {
    if (addr >= cur_segs.lo[i] && addr < cur_segs.hi[i] && len <= cur_segs.hi[i] - addr) {
      memcpy(out, (const void*)(uintptr_t)addr, len);
      return 1;
    }
  }
  return 0;
}

void shim_module_bounds_set(const struct dl_phdr_info* info) {
  cur_segs.n = 0;
  for (int i = 0; i < info->dlpi_phnum && cur_segs.n < MAX_SEGS; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_R) == 0) continue;
    cur_segs.lo[cur_segs.n] = info->dlpi_addr + ph->p_vaddr;
    cur_segs.hi[cur_segs.n] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    ++cur_segs.n;
  }
}

void shim_module_bounds_clear(void) {
  cur_segs.n = 0;
}
