#include "elf/notes.hpp"

#include <fmt/format.h>

#include "base/hex.hpp"

namespace cudatool::elf {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + (a - 1)) & ~(a - 1);
}

}  // namespace

std::vector<Note> read_notes(ByteView bytes, uint64_t align, std::string_view where,
                             Diagnostics* diag) {
  if (align != 8) align = 4;
  std::vector<Note> out;
  uint64_t off = 0;
  while (off < bytes.size()) {
    uint64_t at = off;
    Cursor c(bytes, off);
    uint32_t namesz = c.u32();
    uint32_t descsz = c.u32();
    uint32_t type = c.u32();
    ByteView name = c.bytes(namesz);
    c.skip(align_up(c.pos(), align) - c.pos());
    // The last note may end without padding of its descriptor.
    ByteView desc = c.bytes(descsz);
    if (!c.ok()) {
      if (diag != nullptr) {
        diag->report(make_error(fmt::format("{} note #{}", where, out.size()), "",
                                bytes.base() + at,
                                fmt::format("namesz {} / descsz {} run past the end ({} bytes "
                                            "left)",
                                            namesz, descsz, bytes.size() - at)));
      }
      break;
    }
    Note n;
    n.offset = bytes.base() + at;
    n.type = type;
    std::string_view nm = name.chars();
    if (!nm.empty() && nm.back() == '\0') nm.remove_suffix(1);
    n.name = nm;
    n.desc = desc;
    out.push_back(n);
    off = align_up(c.pos(), align);
  }
  return out;
}

Result<std::vector<Note>> read_section_notes(const ElfImage& elf, const SectionHeader& sh,
                                             Diagnostics* diag) {
  auto b = elf.section_bytes(sh);
  if (!b) return b.error();
  return read_notes(*b, sh.sh_addralign, describe(sh), diag);
}

std::optional<std::string> gnu_build_id(const ElfImage& elf, Diagnostics* diag) {
  auto scan = [](const std::vector<Note>& notes) -> std::optional<std::string> {
    for (const auto& n : notes) {
      if (n.name == "GNU" && n.type == NT_GNU_BUILD_ID) return to_hex(n.desc);
    }
    return std::nullopt;
  };
  for (const auto& s : elf.sections()) {
    if (s.sh_type != SHT_NOTE || !s.in_file) continue;
    auto notes = read_section_notes(elf, s, diag);
    if (!notes) continue;
    if (auto id = scan(*notes)) return id;
  }
  if (!elf.sections().empty()) return std::nullopt;
  for (const auto& p : elf.segments()) {
    if (p.p_type != PT_NOTE || !p.in_file) continue;
    auto b = elf.segment_bytes(p);
    if (!b) continue;
    if (auto id = scan(read_notes(*b, p.p_align, describe(p), diag))) return id;
  }
  return std::nullopt;
}

std::optional<DebugLink> gnu_debuglink(const ElfImage& elf, Diagnostics* diag) {
  const SectionHeader* s = elf.section(".gnu_debuglink");
  if (s == nullptr) return std::nullopt;
  auto b = elf.section_bytes(*s);
  if (!b) {
    if (diag != nullptr) diag->report(b.error());
    return std::nullopt;
  }
  Cursor c(*b);
  DebugLink d;
  d.file = c.cstring();
  c.skip(align_up(c.pos(), 4) - c.pos());
  d.crc32 = c.u32();
  if (!c.ok()) {
    if (diag != nullptr) {
      diag->report(make_error(describe(*s), "", b->base() + c.error_pos(),
                              fmt::format("malformed debug link: {}", c.error_reason())));
    }
    return std::nullopt;
  }
  return d;
}

}  // namespace cudatool::elf
