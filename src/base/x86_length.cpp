#include "base/x86_length.hpp"

#include <xxhash.h>

#include <vector>

namespace cudatool::x86 {

uint64_t masked_fingerprint(ByteView code, uint64_t* insns) {
  // Mask into a small scratch buffer: functions are rarely large, and the copy is what lets the
  // hash run once over contiguous bytes.
  thread_local std::vector<uint8_t> scratch;
  scratch.assign(code.data(), code.data() + code.size());
  uint64_t count = 0;
  uint64_t off = 0;
  while (off < code.size()) {
    auto in = decode_length(*code.sub(off));
    if (!in) break;
    if (in->addr_field_size != 0) {
      for (unsigned k = 0; k < in->addr_field_size; ++k)
        scratch[off + in->addr_field_offset + k] = 0;
    }
    off += in->length;
    ++count;
  }
  if (insns != nullptr) *insns = count;
  return XXH3_64bits(scratch.data(), scratch.size());
}

}  // namespace cudatool::x86
