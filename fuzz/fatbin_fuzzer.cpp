// Fuzzes the fatbin container reader of issue #8 (header, entries, LZ4 and zstd decompression
// under the bomb limits) and the scan that finds containers and CUDA ELF images in raw bytes
// and decodes every entry.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/embedded_images.hpp"
#include "cuda/fatbin.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  ByteView bytes(data, size, 0);
  cuda::DecompressedStore store;
  cuda::DecompressLimits limits;
  limits.max_entry_bytes = 4 << 20;  // keep each run fast; the logic is the same
  limits.max_total_bytes = 16 << 20;
  Diagnostics d;
  if (auto fb = cuda::parse_fatbin(bytes, store, limits, &d)) {
    for (const auto& e : fb->entries) {
      (void)e.kind_name();
      if (!e.data.empty() && e.kind == cuda::kFatbinKindElf) {
        Diagnostics dd;
        (void)cuda::parse_cubin(e.data, &dd);
      }
    }
  }
  EmbeddedImages scan(bytes, nullptr);
  (void)scan.damaged();
  (void)scan.total_bytes();
  // The same scan as a facet of a library (sections bound the images, relocations point at
  // them) when the input is a readable ELF file.
  auto img = DriverImage::from_file(
      MappedFile::from_buffer(std::vector<uint8_t>(data, data + size), "fuzz-input"), "fuzz-input");
  if (img) (void)(*img)->facet<EmbeddedImages>().images().size();
  return 0;
}
