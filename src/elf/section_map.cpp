#include "elf/section_map.hpp"

#include <algorithm>
#include <cstring>

namespace cudatool::elf {

SectionMap::SectionMap(const ElfImage& elf) {
  for (const auto& sh : elf.sections()) {
    if (!sh.is_alloc() || sh.sh_size == 0) continue;
    // TLS sections hold per-thread templates; their sh_addr overlaps ordinary data.
    if ((sh.sh_flags & SHF_TLS) != 0) continue;
    if (sh.sh_addr > UINT64_MAX - sh.sh_size) continue;  // wraps: not a place anything lives
    MappedSection m;
    m.sh = &sh;
    m.addr = sh.sh_addr;
    m.size = sh.sh_size;
    m.exec = sh.is_exec();
    m.write = (sh.sh_flags & SHF_WRITE) != 0;
    if (sh.has_file_bytes() && sh.in_file) {
      if (auto b = elf.section_bytes(sh)) m.bytes = *b;
    }
    sections_.push_back(m);
  }
  std::stable_sort(sections_.begin(), sections_.end(),
                   [](const MappedSection& a, const MappedSection& b) { return a.addr < b.addr; });
  for (size_t i = 1; i < sections_.size(); ++i)
    if (sections_[i].addr < sections_[i - 1].end()) disjoint_ = false;
}

const MappedSection* SectionMap::at(uint64_t vaddr) const {
  auto it = std::upper_bound(sections_.begin(), sections_.end(), vaddr,
                             [](uint64_t v, const MappedSection& s) { return v < s.addr; });
  // Sections may overlap in a damaged file: look back over the few that start at or before.
  for (int k = 0; k < 4 && it != sections_.begin(); ++k) {
    --it;
    if (it->contains(vaddr)) return &*it;
  }
  return nullptr;
}

const MappedSection* SectionMap::named(std::string_view name) const {
  for (const auto& s : sections_)
    if (s.name() == name) return &s;
  return nullptr;
}

std::optional<ByteView> SectionMap::bytes(uint64_t vaddr, uint64_t len) const {
  const MappedSection* s = at(vaddr);
  if (s == nullptr) return std::nullopt;
  return s->bytes.sub(vaddr - s->addr, len);
}

std::optional<uint64_t> SectionMap::u64(uint64_t vaddr) const {
  const MappedSection* s = at(vaddr);
  if (s == nullptr) return std::nullopt;
  return s->bytes.read<uint64_t>(vaddr - s->addr);
}

std::optional<std::string_view> SectionMap::cstring(uint64_t vaddr, uint64_t max_len) const {
  const MappedSection* s = at(vaddr);
  if (s == nullptr) return std::nullopt;
  ByteView rest = s->bytes.clamp(vaddr - s->addr, max_len + 1);
  if (rest.empty()) return std::nullopt;
  const void* nul = std::memchr(rest.data(), 0, rest.size());
  if (nul == nullptr) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(rest.data()),
                          static_cast<const uint8_t*>(nul) - rest.data());
}

std::optional<uint64_t> SectionMap::offset_of(uint64_t vaddr) const {
  const MappedSection* s = at(vaddr);
  if (s == nullptr || s->bytes.empty()) return std::nullopt;
  return s->bytes.base() + (vaddr - s->addr);
}

}  // namespace cudatool::elf
