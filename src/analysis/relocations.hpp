// Facet: the image's dynamic relocations as a vaddr -> target index, and its SHF_ALLOC sections
// as an address map. Built once, on first use, by any analysis that reads pointer tables
// (driver tables, function maps): `img.facet<Relocations>()`.
#pragma once

#include "analysis/driver_image.hpp"
#include "elf/reloc_index.hpp"
#include "elf/section_map.hpp"

namespace cudatool {

class Relocations {
 public:
  explicit Relocations(DriverImage& img);
  [[nodiscard]] const elf::RelocIndex& index() const { return index_; }
  [[nodiscard]] const elf::SectionMap& sections() const { return sections_; }

 private:
  elf::SectionMap sections_;
  elf::RelocIndex index_;
};

}  // namespace cudatool
