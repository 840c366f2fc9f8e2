// Fuzzes the CUDA ELF image reader of issue #8: the extent computed from an image's own headers,
// then the decoder (ELF tables, e_flags of ABI 7 and 8, .note.nv.* notes, symbols, .nv.info
// attribute streams, KPARAM_INFO) on exactly those bytes and on the whole input.
#include <cstddef>
#include <cstdint>

#include "cuda/cubin.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  ByteView bytes(data, size, 0x1000);
  if (auto extent = cuda::cuda_elf_extent(bytes)) {
    Diagnostics d;
    if (auto c = cuda::parse_cubin(*bytes.sub(0, *extent), &d)) {
      for (const auto& k : c->kernels) {
        (void)k.params.size();
        (void)cuda::eiattr_name(k.other_attributes.empty() ? 0 : k.other_attributes[0]);
      }
      for (const auto& s : c->elf.sections()) (void)cuda::cuda_section_type_name(s.sh_type);
    }
  }
  Diagnostics d;
  (void)cuda::parse_cubin(bytes, &d);
  (void)cuda::elf_extent(bytes);
  (void)cuda::read_nv_info(bytes, "fuzz", &d);
  (void)cuda::arch_from_options(bytes.chars());
  return 0;
}
