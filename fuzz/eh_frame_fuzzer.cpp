// Fuzzes the .eh_frame parser directly. Input: one flags byte (bit 0: stop at the first zero
// terminator; bit 1: offer resync points), eight bytes of section address, then the section.
// Resync points are every 8th offset the input names in its own bytes, so broken walks resume
// at arbitrary places. Invariants are checked, not just the absence of crashes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "elf/eh_frame.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  if (size < 9) return 0;
  const uint8_t flags = data[0];
  uint64_t vaddr;
  std::memcpy(&vaddr, data + 1, 8);
  ByteView section(data + 9, size - 9, 0x1000);
  elf::EhFrameOptions opts;
  opts.stop_at_terminator = (flags & 1) != 0;
  opts.text_base = vaddr ^ 0x5555;
  opts.data_base = vaddr + 0x1000;
  opts.expected_fdes = flags * 1000;  // a hint only: must be capped by the size
  elf::EhFrame::ResyncPoints resync;
  if ((flags & 2) != 0) {
    resync = [&] {
      std::vector<uint64_t> out;
      for (size_t i = 0; i + 4 <= section.size(); i += 32) {
        uint32_t v;
        std::memcpy(&v, section.data() + i, 4);
        out.push_back(v % (section.size() + 16));
      }
      return out;
    };
  }
  Diagnostics diag;
  elf::EhFrame e = elf::EhFrame::read(section, vaddr, opts, resync, &diag);
  uint64_t prev = 0;
  for (size_t i = 0; i < e.fdes().size(); ++i) {
    const auto& f = e.fdes()[i];
    FUZZ_CHECK(f.cie < e.cies().size());
    FUZZ_CHECK(f.offset < section.size() && (i == 0 || f.offset > prev));
    FUZZ_CHECK(e.fde_at(f.offset) == i);
    prev = f.offset;
  }
  FUZZ_CHECK(e.damaged() == 0 || !diag.empty());
  return 0;
}
