// ELF notes (gABI "Note Section"): {namesz u32, descsz u32, type u32, name, desc}, name and desc
// padded to the note alignment (4, or 8 for sections aligned to 8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::elf {

struct Note {
  std::string_view name;  // without the terminating NUL
  uint32_t type = 0;
  ByteView desc;
  uint64_t offset = 0;  // file offset of the note header
};

// All notes in `bytes`. A damaged note ends the walk (its successors cannot be found) and is
// reported; notes before it are returned.
std::vector<Note> read_notes(ByteView bytes, uint64_t align, std::string_view where,
                             Diagnostics* diag);
// Notes of one section.
Result<std::vector<Note>> read_section_notes(const ElfImage& elf, const SectionHeader& sh,
                                             Diagnostics* diag);

// NT_GNU_BUILD_ID of the image (from any SHT_NOTE section or PT_NOTE segment), as hex.
std::optional<std::string> gnu_build_id(const ElfImage& elf, Diagnostics* diag);

// .gnu_debuglink: the debug file name, then padding to 4, then a CRC32 of the debug file.
struct DebugLink {
  std::string_view file;
  uint32_t crc32 = 0;
};
std::optional<DebugLink> gnu_debuglink(const ElfImage& elf, Diagnostics* diag);

}  // namespace cudatool::elf
