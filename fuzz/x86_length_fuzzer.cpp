// Fuzzes the x86-64 length decoder and the masked fingerprint over arbitrary bytes, and the
// dispatch decoder's fast paths built on it (the stub decoder and the note printer).
#include <cstddef>
#include <cstdint>

#include "base/x86_length.hpp"
#include "cuda/stub_insn.hpp"

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
  cuda::StubInsn s;
  if (cuda::decode_stub_insn_fast(data, size, 0x7ff0, s) && (s.length == 0 || s.length > size)) {
    __builtin_trap();
  }
  if (auto t = cuda::stub_insn_text_fast(code, 0x7ff0); t && t->empty()) __builtin_trap();
  return 0;
}
