// The dynamic section (gABI "Dynamic Section"): DT_NEEDED, DT_SONAME and the rest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::elf {

struct DynamicEntry {
  int64_t d_tag = 0;
  uint64_t d_val = 0;
};

struct DynamicInfo {
  std::vector<DynamicEntry> entries;  // up to and excluding DT_NULL
  std::vector<std::string_view> needed;
  std::string_view soname;
  std::string_view runpath;
  std::string_view rpath;
};

// From the SHT_DYNAMIC section (or PT_DYNAMIC when there are no sections); strings from the
// section's sh_link string table. Empty when the object has no dynamic section.
Result<DynamicInfo> read_dynamic(const ElfImage& elf, Diagnostics* diag);

std::string dynamic_tag_name(int64_t tag);

}  // namespace cudatool::elf
