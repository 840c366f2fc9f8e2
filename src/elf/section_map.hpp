// The loaded image as its SHF_ALLOC sections: "what lies at this virtual address?", and
// bounds-checked reads there that never cross the end of the section they start in (a table that
// runs past its section is damage to report, not bytes to borrow from the next one).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::elf {

struct MappedSection {
  const SectionHeader* sh = nullptr;
  uint64_t addr = 0;
  uint64_t size = 0;
  ByteView bytes;  // file bytes; empty for SHT_NOBITS or when not in the file
  bool exec = false;
  bool write = false;
  [[nodiscard]] bool contains(uint64_t vaddr) const { return vaddr >= addr && vaddr - addr < size; }
  [[nodiscard]] uint64_t end() const { return addr + size; }
  [[nodiscard]] std::string_view name() const { return sh ? sh->name : std::string_view(); }
};

class SectionMap {
 public:
  SectionMap() = default;
  explicit SectionMap(const ElfImage& elf);

  // The section holding vaddr, or null (sorted by address; overlapping sections: the first).
  [[nodiscard]] const MappedSection* at(uint64_t vaddr) const;
  // at(), trying first the section a caller found last (`hint`, updated): a scan over tens of
  // thousands of relocations meets the same two or three sections again and again.
  [[nodiscard]] const MappedSection* at(uint64_t vaddr, const MappedSection*& hint) const {
    if (hint == nullptr || !hint->contains(vaddr) || !disjoint_) hint = at(vaddr);
    return hint;
  }
  // No two sections overlap (every real file): a section known to contain an address is then
  // the one at() returns, and a caller walking nearby addresses may keep it.
  [[nodiscard]] bool disjoint() const { return disjoint_; }
  [[nodiscard]] const MappedSection* named(std::string_view name) const;
  [[nodiscard]] const std::vector<MappedSection>& sections() const { return sections_; }

  // `len` file bytes at vaddr, all inside one section; nothing otherwise.
  [[nodiscard]] std::optional<ByteView> bytes(uint64_t vaddr, uint64_t len) const;
  [[nodiscard]] std::optional<uint64_t> u64(uint64_t vaddr) const;
  // The NUL-terminated string at vaddr, ending inside its section and at most `max_len` long.
  [[nodiscard]] std::optional<std::string_view> cstring(uint64_t vaddr,
                                                        uint64_t max_len = 4096) const;
  // File offset of vaddr (for messages).
  [[nodiscard]] std::optional<uint64_t> offset_of(uint64_t vaddr) const;

 private:
  std::vector<MappedSection> sections_;
  bool disjoint_ = true;
};

}  // namespace cudatool::elf
