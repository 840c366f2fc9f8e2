/* shim_modules_probe.h: the preload shim's module code (src/record/preload/modules.c and the
 * bounds its reads are checked against, module_bounds.c, included here whole so that their static
 * readers are reachable) over an object image held in memory, as
 * dl_iterate_phdr would describe it. The loader guarantees that an object's PT_LOAD segments are
 * mapped; the probe gives that guarantee by cutting them to the image. Everything else in the
 * program headers (PT_NOTE, PT_GNU_EH_FRAME, offsets, sizes) is the fuzzer's. */
#define _GNU_SOURCE
#include "shim_modules_probe.h"
#include "shim_probe_paint.h"

#include <link.h>
#include <string.h>

#include "../src/record/preload/module_bounds.c"
#include "../src/record/preload/modules.c"

/* What modules.c needs of the rest of the shim (the runtime's thread state and pid, the output). */
__thread struct rt_tls rt_t __attribute__((tls_model("initial-exec")));
int rt_pid = 1;
void shim_emit_line(const char* line, size_t len) {
  (void)line;
  (void)len;
}

const char* shim_modules_probe(const uint8_t* image, size_t n, const uint8_t* phdrs, size_t nph,
                               uint64_t pc_off) {
  ElfW(Phdr) ph[16];
  if (nph > 16) nph = 16;
  if (nph > 0) memcpy(ph, phdrs, nph * sizeof ph[0]);
  for (size_t i = 0; i < nph; ++i) {
    if (ph[i].p_type != PT_LOAD) continue;
    if (ph[i].p_vaddr >= n) {
      ph[i].p_memsz = 0;
    } else if (ph[i].p_memsz > n - ph[i].p_vaddr) {
      ph[i].p_memsz = n - ph[i].p_vaddr;
    }
  }
  struct dl_phdr_info info;
  memset(&info, 0, sizeof info);
  info.dlpi_addr = (ElfW(Addr))(uintptr_t)image;
  info.dlpi_name = "/fuzz/object.so";
  info.dlpi_phdr = ph;
  info.dlpi_phnum = (ElfW(Half))nph;

  /* The build id: hex digits only, at most 32 bytes' worth, read inside the segments. */
  char id[65];
  shim_module_bounds_set(&info);
  build_id_of(&info, id);
  shim_module_bounds_clear();
  size_t len = strnlen(id, sizeof id);
  if (len == sizeof id) return "build id not terminated";
  if (len % 2 != 0) return "build id of an odd number of digits";
  for (size_t i = 0; i < len; ++i) {
    if (strchr(kHexDigits, id[i]) == NULL) return "build id not hex";
  }
  uint64_t lo, hi;
  range_of(&info, &lo, &hi);
  if (hi != 0 && (lo > hi || (lo & 4095) != 0 || (hi & 4095) != 0)) return "bad range";

  /* The rule of a PC in it, twice: the same answer, and the segment bounds cleared after. */
  struct uw_rule r1, r2;
  struct find f1 = {
      (uint64_t)(uintptr_t)image + pc_off, (uint64_t)(uintptr_t)image + pc_off, &r1, 0, 0, 0};
  struct find f2 = f1;
  f2.rule = &r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  paint_stack();
  int held1 = find_cb(&info, sizeof info, &f1);
  paint_stack();
  int held2 = find_cb(&info, sizeof info, &f2);
  if (cur_segs.n != 0) return "segment bounds left set";
  if (held1 != held2 || r1.kind != r2.kind) return "two lookups of one PC differ";
  if (held1 && (r1.kind < 0 || r1.kind > 64)) return "rule kind out of range";
  return NULL;
}
