#include "elf/dynamic.hpp"

#include <fmt/format.h>

namespace cudatool::elf {

Result<DynamicInfo> read_dynamic(const ElfImage& elf, Diagnostics* diag) {
  DynamicInfo info;
  ByteView bytes;
  ByteView strs;
  const SectionHeader* dyn = elf.section_of_type(SHT_DYNAMIC);
  if (dyn != nullptr) {
    auto b = elf.section_bytes(*dyn);
    if (!b) return b.error();
    bytes = *b;
    if (const SectionHeader* st = elf.section_at(dyn->sh_link)) {
      auto s = elf.section_bytes(*st);
      if (s) strs = *s;
    }
  } else {
    for (const auto& p : elf.segments()) {
      if (p.p_type != PT_DYNAMIC) continue;
      auto b = elf.segment_bytes(p);
      if (!b) return b.error();
      bytes = *b;
    }
  }
  if (bytes.empty()) return info;
  uint64_t count = bytes.size() / 16;
  uint64_t strtab_vaddr = 0;
  uint64_t strsz = 0;
  for (uint64_t i = 0; i < count; ++i) {
    DynamicEntry e{load_le<int64_t>(bytes.data() + i * 16),
                   load_le<uint64_t>(bytes.data() + i * 16 + 8)};
    if (e.d_tag == DT_NULL) break;
    if (e.d_tag == DT_STRTAB) strtab_vaddr = e.d_val;
    if (e.d_tag == DT_STRSZ) strsz = e.d_val;
    info.entries.push_back(e);
  }
  if (strs.empty() && strtab_vaddr != 0) {
    if (auto b = elf.bytes_at_vaddr(strtab_vaddr, strsz)) strs = *b;
  }
  auto str = [&](const DynamicEntry& e) -> std::string_view {
    auto s = strs.cstring(e.d_val);
    if (!s) {
      if (diag != nullptr) {
        diag->report(make_error("dynamic section", dynamic_tag_name(e.d_tag), bytes.base(),
                                fmt::format("string offset {:#x} is outside the dynamic string "
                                            "table (size {:#x})",
                                            e.d_val, strs.size())));
      }
      return {};
    }
    return *s;
  };
  for (const auto& e : info.entries) {
    switch (e.d_tag) {
      case DT_NEEDED:
        info.needed.push_back(str(e));
        break;
      case DT_SONAME:
        info.soname = str(e);
        break;
      case DT_RUNPATH:
        info.runpath = str(e);
        break;
      case DT_RPATH:
        info.rpath = str(e);
        break;
      default:
        break;
    }
  }
  return info;
}

std::string dynamic_tag_name(int64_t tag) {
  switch (tag) {
    case DT_NEEDED:
      return "DT_NEEDED";
    case DT_SONAME:
      return "DT_SONAME";
    case DT_RPATH:
      return "DT_RPATH";
    case DT_RUNPATH:
      return "DT_RUNPATH";
    case DT_STRTAB:
      return "DT_STRTAB";
    case DT_SYMTAB:
      return "DT_SYMTAB";
    case DT_RELA:
      return "DT_RELA";
    case DT_RELASZ:
      return "DT_RELASZ";
    case DT_JMPREL:
      return "DT_JMPREL";
    case DT_INIT:
      return "DT_INIT";
    case DT_FINI:
      return "DT_FINI";
    default:
      return fmt::format("DT_{:#x}", static_cast<uint64_t>(tag));
  }
}

}  // namespace cudatool::elf
