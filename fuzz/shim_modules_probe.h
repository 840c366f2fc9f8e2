/* The preload shim's module code (src/record/preload/modules.c: build ids from PT_NOTE, the
 * address range of an object, the unwind rule of a PC through PT_GNU_EH_FRAME), for
 * shim_modules_fuzzer.cpp (shim_modules_probe.c): one object image held in memory. */
#ifndef CUDATOOL_FUZZ_SHIM_MODULES_PROBE_H
#define CUDATOOL_FUZZ_SHIM_MODULES_PROBE_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* `phdrs`: nph (at most 16) Elf64_Phdr as dl_iterate_phdr gives them, relative to `image`.
 * Returns NULL when every invariant held, else what broke. */
const char* shim_modules_probe(const uint8_t* image, size_t n, const uint8_t* phdrs, size_t nph,
                               uint64_t pc_off);
#ifdef __cplusplus
}
#endif
#endif
