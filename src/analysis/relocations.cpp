#include "analysis/relocations.hpp"

namespace cudatool {

Relocations::Relocations(DriverImage& img)
    : sections_(img.elf()),
      index_(elf::RelocIndex::build(img.elf(), img.dynamic_symbols(), &img.diagnostics())) {}

}  // namespace cudatool
