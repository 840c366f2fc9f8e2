// Fuzzes the preload shim's reading of the loaded objects (src/record/preload/modules.c): the
// build id from PT_NOTE segments, an object's address range, and the unwind rule of a PC looked
// up through its PT_GNU_EH_FRAME. The shim reads them in the memory of every object the program
// loads, so hostile program headers and notes must give an empty build id or a "no info" rule,
// never a read outside the object's segments, a crash or a loop.
//
// Input: 1 byte: the number of program headers (at most 16); that many Elf64_Phdr (56 bytes
// each); 4 bytes: the offset of the PC looked up; then the image (the object's memory). The
// image is copied to a buffer of exactly its size, so that ASan sees a read past it. Seeds:
// fixture libraries' program headers and files (fuzz/seeds/shim_modules_fuzzer.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "shim_modules_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t nph = data[0] > 16 ? 16 : data[0];
  size_t head = 1 + nph * 56 + 4;
  if (size <= head) return 0;
  std::vector<uint8_t> phdrs(data + 1, data + 1 + nph * 56);
  uint32_t pc_off;
  std::memcpy(&pc_off, data + 1 + nph * 56, 4);
  std::vector<uint8_t> image(data + head, data + size);
  const char* broken = shim_modules_probe(image.data(), image.size(), phdrs.data(), nph, pc_off);
  if (broken != nullptr) {
    std::fprintf(stderr, "shim_modules_fuzzer: %s (%zu headers, pc +0x%x)\n", broken, nph, pc_off);
    std::abort();
  }
  return 0;
}
