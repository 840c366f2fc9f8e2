#include "elf/relocations.hpp"

#include <fmt/format.h>

namespace cudatool::elf {

Result<RelaTable> RelaTable::from_section(const ElfImage& elf, const SectionHeader& sh) {
  if (sh.sh_type != SHT_RELA) {
    return make_error(describe(sh), "sh_type", std::nullopt, "not a SHT_RELA section");
  }
  if (sh.sh_entsize != 0 && sh.sh_entsize != 24) {
    return make_error(describe(sh), "sh_entsize", std::nullopt,
                      fmt::format("{} (ELF64 RELA entries are 24 bytes)", sh.sh_entsize));
  }
  auto b = elf.section_bytes(sh);
  if (!b) return b.error();
  return RelaTable(*b);
}

std::string x86_64_reloc_name(uint32_t type) {
  switch (type) {
    case R_X86_64_NONE:
      return "R_X86_64_NONE";
    case R_X86_64_64:
      return "R_X86_64_64";
    case R_X86_64_PC32:
      return "R_X86_64_PC32";
    case R_X86_64_GLOB_DAT:
      return "R_X86_64_GLOB_DAT";
    case R_X86_64_JUMP_SLOT:
      return "R_X86_64_JUMP_SLOT";
    case R_X86_64_RELATIVE:
      return "R_X86_64_RELATIVE";
    case R_X86_64_DTPMOD64:
      return "R_X86_64_DTPMOD64";
    case R_X86_64_DTPOFF64:
      return "R_X86_64_DTPOFF64";
    case R_X86_64_TPOFF64:
      return "R_X86_64_TPOFF64";
    case R_X86_64_IRELATIVE:
      return "R_X86_64_IRELATIVE";
    default:
      return fmt::format("{:#x}?", type);
  }
}

}  // namespace cudatool::elf
