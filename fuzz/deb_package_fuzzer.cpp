// Fuzzes the Debian package path: ar members, decompression (xz / zstd / gzip, capped), tar
// entries, library member selection.
#include <cstddef>
#include <cstdint>

#include "analysis/deb_input.hpp"
#include "base/archive.hpp"
#include "base/decompress.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  ByteView in(data, size);
  (void)extract_library_from_deb(in, "fuzz.deb");
  (void)read_tar(in);
  // Small cap: exercises the bomb guard without using much memory.
  (void)decompress(in, detect_compression(in), 1 << 20, "fuzz");
  return 0;
}
