// Fuzzes the x86-64 length decoder and the masked fingerprint over arbitrary bytes.
#include <cstddef>
#include <cstdint>

#include "base/x86_length.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  ByteView code(data, size);
  if (auto in = x86::decode_length(code)) {
    if (in->length == 0 || in->length > size || in->length > 15) __builtin_trap();
    if (in->addr_field_size != 0 && in->addr_field_offset + in->addr_field_size > in->length) {
      __builtin_trap();
    }
  }
  (void)x86::masked_fingerprint(code);
  return 0;
}
