// Fuzzes the whole static reader of issue #2 through the facade: ELF headers, sections,
// segments, dynamic section, symbols, versions, notes (build id, fwd-compat JSON, also parsed
// from the raw input), debuglink, .eh_frame_hdr and the driver-version string scan.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/driver_image.hpp"
#include "cuda/fwd_compat.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  // The fwd-compat descriptor parser on the raw bytes too: inside an ELF file a mutation rarely
  // keeps the note framing intact, so its JSON paths (ranges, odd keys) would be reached seldom.
  (void)cuda::parse_fwd_compat_json(std::string_view(reinterpret_cast<const char*>(data), size));
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  if (!img) return 0;
  DriverImage& d = **img;
  (void)d.build_id();
  (void)d.debuglink();
  (void)d.dynamic();
  (void)d.exports();
  (void)d.imports();
  (void)d.fwd_compat_note();
  (void)d.eh_frame_hdr();
  (void)d.driver_version(true);
  (void)d.exec_segment();
  for (const auto& s : d.elf().sections()) (void)d.elf().section_bytes(s);
  (void)d.elf().vaddr_to_offset(size);
  return 0;
}
