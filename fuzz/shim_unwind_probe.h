/* The preload shim's reader of unwind tables (src/record/preload/eh_frame.c), for
 * shim_unwind_fuzzer.cpp (shim_unwind_probe.c): one lookup over an object image held in memory. */
#ifndef CUDATOOL_FUZZ_SHIM_UNWIND_PROBE_H
#define CUDATOOL_FUZZ_SHIM_UNWIND_PROBE_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Looks up `lookup` (an address) through the .eh_frame_hdr at `hdr` with the shim's own code,
 * every read of which is allowed only inside [image, image + n), and evaluates the CFI of the
 * FDE found, twice. Returns NULL when every invariant held, else what broke. *found: an FDE was
 * found; *kind: the rule's kind (enum uw_kind). */
const char* shim_unwind_probe(const uint8_t* image, size_t n, uint64_t hdr, uint64_t lookup,
                              int* found, int* kind);
#ifdef __cplusplus
}
#endif
#endif
