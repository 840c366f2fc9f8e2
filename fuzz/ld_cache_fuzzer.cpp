// Fuzzes the ld.so.cache reader used to find the system's libcuda.so.1.
#include <cstddef>
#include <cstdint>

#include "analysis/find_library.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = cudatool::parse_ld_cache(cudatool::ByteView(data, size));
  (void)r;
  return 0;
}
