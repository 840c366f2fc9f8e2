// RELA relocation tables (gABI "Relocation"; x86-64 psABI for the types). Read lazily: libcuda
// carries tens of thousands of R_X86_64_RELATIVE entries and most commands need none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::elf {

struct Rela {
  uint64_t r_offset = 0;
  uint32_t type = 0;  // ELF64_R_TYPE(r_info)
  uint32_t sym = 0;   // ELF64_R_SYM(r_info)
  int64_t r_addend = 0;
};

class RelaTable {
 public:
  RelaTable() = default;
  explicit RelaTable(ByteView bytes) : bytes_(bytes) {}
  // Entries of a SHT_RELA section.
  static Result<RelaTable> from_section(const ElfImage& elf, const SectionHeader& sh);

  [[nodiscard]] uint64_t size() const { return bytes_.size() / 24; }
  [[nodiscard]] Rela at(uint64_t i) const {
    const uint8_t* p = bytes_.data() + i * 24;
    uint64_t info = load_le<uint64_t>(p + 8);
    return {load_le<uint64_t>(p), static_cast<uint32_t>(info & 0xffffffff),
            static_cast<uint32_t>(info >> 32), load_le<int64_t>(p + 16)};
  }
  [[nodiscard]] ByteView bytes() const { return bytes_; }

 private:
  ByteView bytes_;
};

std::string x86_64_reloc_name(uint32_t type);

}  // namespace cudatool::elf
