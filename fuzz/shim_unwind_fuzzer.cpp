// Fuzzes the preload shim's in-process reader of unwind tables (src/record/preload/eh_frame.c):
// the .eh_frame_hdr search, the walk of .eh_frame when the table cannot be searched, the CIE and
// FDE augmentations, the CFA program up to a PC. The shim reads them in the memory of every
// loaded object, so a damaged or hostile table must end in a rule kind (UW_BAD_CFI,
// UW_UNSUPPORTED, …), never a read outside the object, a crash or a loop.
//
// Input: 4 bytes offset of .eh_frame_hdr in the image, 4 bytes offset of the PC looked up, then
// the image (an object's readable memory; the seeds are whole fixture libraries' first
// megabyte, fuzz/seeds/shim_unwind_fuzzer.sh). The image is copied to a buffer of exactly its
// size, so that ASan sees a read past it even if the probe's bounds were wrong.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "shim_unwind_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint32_t hdr_off, pc_off;
  std::memcpy(&hdr_off, data, 4);
  std::memcpy(&pc_off, data + 4, 4);
  std::vector<uint8_t> image(data + 8, data + size);
  if (image.empty()) return 0;
  uint64_t base = reinterpret_cast<uintptr_t>(image.data());
  // Offsets beyond the image are allowed: the shim must refuse them, not follow them.
  int found = 0, kind = -1;
  const char* broken =
      shim_unwind_probe(image.data(), image.size(), base + hdr_off, base + pc_off, &found, &kind);
  if (broken != nullptr) {
    std::fprintf(stderr, "shim_unwind_fuzzer: %s (hdr +0x%x, pc +0x%x, kind %d)\n", broken, hdr_off,
                 pc_off, kind);
    std::abort();
  }
  return 0;
}
