#include "elf/elf_image.hpp"

#include <fmt/format.h>

namespace cudatool::elf {
namespace {

constexpr uint64_t kEhdrSize = 64;
constexpr uint64_t kPhdrSize = 56;
constexpr uint64_t kShdrSize = 64;

FileHeader read_file_header(ByteView f) {
  Cursor c(f);
  FileHeader h;
  c.skip(4);
  h.ei_class = c.u8();
  h.ei_data = c.u8();
  h.ei_version = c.u8();
  h.ei_osabi = c.u8();
  h.ei_abiversion = c.u8();
  c.seek(16);
  h.e_type = c.u16();
  h.e_machine = c.u16();
  h.e_version = c.u32();
  h.e_entry = c.u64();
  h.e_phoff = c.u64();
  h.e_shoff = c.u64();
  h.e_flags = c.u32();
  h.e_ehsize = c.u16();
  h.e_phentsize = c.u16();
  h.e_phnum = c.u16();
  h.e_shentsize = c.u16();
  h.e_shnum = c.u16();
  h.e_shstrndx = c.u16();
  return h;
}

SectionHeader read_section_header(ByteView b, uint32_t index) {
  Cursor c(b);
  SectionHeader s;
  s.index = index;
  s.sh_name = c.u32();
  s.sh_type = c.u32();
  s.sh_flags = c.u64();
  s.sh_addr = c.u64();
  s.sh_offset = c.u64();
  s.sh_size = c.u64();
  s.sh_link = c.u32();
  s.sh_info = c.u32();
  s.sh_addralign = c.u64();
  s.sh_entsize = c.u64();
  return s;
}

ProgramHeader read_program_header(ByteView b, uint32_t index) {
  Cursor c(b);
  ProgramHeader p;
  p.index = index;
  p.p_type = c.u32();
  p.p_flags = c.u32();
  p.p_offset = c.u64();
  p.p_vaddr = c.u64();
  p.p_paddr = c.u64();
  p.p_filesz = c.u64();
  p.p_memsz = c.u64();
  p.p_align = c.u64();
  return p;
}

std::string hex_unknown(uint64_t v) {
  return fmt::format("{:#x}?", v);
}

}  // namespace

std::string describe(const SectionHeader& sh) {
  if (sh.name.empty()) return fmt::format("section [{}]", sh.index);
  return fmt::format("section [{}] {}", sh.index, sh.name);
}

std::string describe(const ProgramHeader& ph) {
  return fmt::format("program header [{}] {}", ph.index, segment_type_name(ph.p_type));
}

namespace {

// The identification: an ELF64 little-endian file with a whole header.
Status check_ident(ByteView file) {
  const uint64_t fsize = file.size();
  if (fsize < 4 || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) {
    return make_error("ELF header", "e_ident", 0, "not an ELF file (no \\x7fELF magic)");
  }
  if (fsize < EI_NIDENT) {
    return make_error("ELF header", "e_ident", 0,
                      fmt::format("file of {} bytes is truncated inside e_ident", fsize));
  }
  uint8_t ei_class = file.data()[EI_CLASS];
  uint8_t ei_data = file.data()[EI_DATA];
  if (ei_class == ELFCLASS32) {
    return make_error("ELF header", "EI_CLASS", EI_CLASS,
                      "ELF32 file: only ELF64 (x86-64 libraries and CUDA ELF) is supported");
  }
  if (ei_class != ELFCLASS64) {
    return make_error("ELF header", "EI_CLASS", EI_CLASS,
                      fmt::format("invalid ELF class {}", ei_class));
  }
  if (ei_data == ELFDATA2MSB) {
    return make_error("ELF header", "EI_DATA", EI_DATA,
                      "big-endian file: only little-endian ELF is supported");
  }
  if (ei_data != ELFDATA2LSB) {
    return make_error("ELF header", "EI_DATA", EI_DATA,
                      fmt::format("invalid data encoding {}", ei_data));
  }
  if (fsize < kEhdrSize) {
    return make_error(
        "ELF header", "", 0,
        fmt::format("file of {} bytes is shorter than the 64-byte ELF64 header", fsize));
  }

  return Status::success();
}

// The program header table (file ranges past the end reported, kept with in_file false).
Result<std::vector<ProgramHeader>> read_segments(ByteView file, const FileHeader& h,
                                                 Diagnostics* diag) {
  const uint64_t fsize = file.size();
  std::vector<ProgramHeader> out;
  if (h.e_phnum > 0) {
    if (h.e_phentsize != kPhdrSize) {
      return make_error("ELF header", "e_phentsize", 54,
                        fmt::format("{} (ELF64 program headers are 56 bytes)", h.e_phentsize));
    }
    uint64_t table = uint64_t{h.e_phnum} * kPhdrSize;
    if (h.e_phoff >= fsize) {
      return make_error(
          "program header table", "e_phoff", 32,
          fmt::format("{:#x} is past the end of the file (size {:#x})", h.e_phoff, fsize));
    }
    if (!file.contains(h.e_phoff, table)) {
      return make_error("program header table", "e_phnum", 56,
                        fmt::format("{} entries x 56 bytes at e_phoff {:#x} exceed file size {:#x}",
                                    h.e_phnum, h.e_phoff, fsize));
    }
    out.reserve(h.e_phnum);
    for (uint32_t i = 0; i < h.e_phnum; ++i) {
      ProgramHeader ph = read_program_header(*file.sub(h.e_phoff + i * kPhdrSize, kPhdrSize), i);
      if (ph.p_filesz > 0 && !file.contains(ph.p_offset, ph.p_filesz)) {
        ph.in_file = false;
        if (diag != nullptr) {
          diag->report(make_error(describe(ph), "p_offset", h.e_phoff + i * kPhdrSize + 8,
                                  fmt::format("{:#x} + p_filesz {:#x} exceeds file size {:#x}",
                                              ph.p_offset, ph.p_filesz, fsize)));
        }
      }
      out.push_back(ph);
    }
  }

  return out;
}

// The sections' names from the section-name string table.
void name_sections(ByteView file, const FileHeader& h, uint64_t shstrndx,
                   std::vector<SectionHeader>& out, Diagnostics* diag) {
  if (out.empty() || shstrndx == SHN_UNDEF) return;
  if (shstrndx >= out.size()) {
    if (diag != nullptr) {
      diag->report(make_error(
          "ELF header", "e_shstrndx", 62,
          fmt::format("{} is not a section index (there are {})", shstrndx, out.size())));
    }
    return;
  }
  const SectionHeader& strs = out[shstrndx];
  auto names = strs.in_file ? file.sub(strs.sh_offset, strs.sh_size) : std::nullopt;
  if (!names) return;
  for (auto& s : out) {
    auto n = names->cstring(s.sh_name);
    if (n) {
      s.name = *n;
    } else if (diag != nullptr && s.sh_name != 0) {
      diag->report(make_error(describe(s), "sh_name", h.e_shoff + s.index * kShdrSize,
                              fmt::format("name offset {:#x} is outside .shstrtab (size "
                                          "{:#x}) or unterminated",
                                          s.sh_name, strs.sh_size)));
    }
  }
}

// The section header table (with extended numbering: gABI "Sections", e_shnum == 0 and
// e_shstrndx == SHN_XINDEX take their real values from section header 0), named.
Result<std::vector<SectionHeader>> read_sections(ByteView file, const FileHeader& h,
                                                 Diagnostics* diag) {
  const uint64_t fsize = file.size();
  std::vector<SectionHeader> out;
  if (h.e_shoff == 0) return out;
  if (h.e_shentsize != kShdrSize) {
    return make_error("ELF header", "e_shentsize", 58,
                      fmt::format("{} (ELF64 section headers are 64 bytes)", h.e_shentsize));
  }
  if (!file.contains(h.e_shoff, kShdrSize)) {
    return make_error(
        "section header table", "e_shoff", 40,
        fmt::format("{:#x} is past the end of the file (size {:#x})", h.e_shoff, fsize));
  }
  SectionHeader first = read_section_header(*file.sub(h.e_shoff, kShdrSize), 0);
  uint64_t shnum = h.e_shnum != 0 ? h.e_shnum : first.sh_size;
  uint64_t shstrndx = h.e_shstrndx != SHN_XINDEX ? h.e_shstrndx : first.sh_link;
  // Cap the count by what the file can hold before allocating anything.
  if (shnum > (fsize - h.e_shoff) / kShdrSize) {
    return make_error("section header table", "e_shnum", 60,
                      fmt::format("{} entries x 64 bytes at {:#x} exceed file size {:#x}", shnum,
                                  h.e_shoff, fsize));
  }
  out.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    out.push_back(read_section_header(*file.sub(h.e_shoff + i * kShdrSize, kShdrSize),
                                      static_cast<uint32_t>(i)));
  }
  for (auto& s : out) {
    if (s.has_file_bytes() && s.sh_size > 0 && !file.contains(s.sh_offset, s.sh_size)) {
      s.in_file = false;
      if (diag != nullptr) {
        diag->report(make_error(describe(s), "sh_offset", h.e_shoff + s.index * kShdrSize + 24,
                                fmt::format("{:#x} + sh_size {:#x} exceeds file size {:#x}",
                                            s.sh_offset, s.sh_size, fsize)));
      }
    }
  }
  name_sections(file, h, shstrndx, out, diag);
  return out;
}

}  // namespace

Result<ElfImage> ElfImage::parse(ByteView file, Diagnostics* diag) {
  if (Status st = check_ident(file); !st.ok()) return st.error();
  ElfImage img;
  img.file_ = file;
  img.header_ = read_file_header(file);
  const FileHeader& h = img.header_;
  if (h.e_ehsize < kEhdrSize) {
    return make_error("ELF header", "e_ehsize", 52,
                      fmt::format("{} is smaller than the ELF64 header (64)", h.e_ehsize));
  }

  auto segments = read_segments(file, h, diag);
  if (!segments) return segments.error();
  img.segments_ = std::move(*segments);
  auto sections = read_sections(file, h, diag);
  if (!sections) return sections.error();
  img.sections_ = std::move(*sections);
  return img;
}

const SectionHeader* ElfImage::section(std::string_view name) const {
  for (const auto& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const SectionHeader* ElfImage::section_of_type(uint32_t sh_type) const {
  for (const auto& s : sections_) {
    if (s.sh_type == sh_type) return &s;
  }
  return nullptr;
}

Result<ByteView> ElfImage::section_bytes(const SectionHeader& sh) const {
  if (!sh.has_file_bytes()) return ByteView(file_.data(), 0, sh.sh_offset);
  auto b = file_.sub(sh.sh_offset, sh.sh_size);
  if (!b) {
    return make_error(describe(sh), "sh_offset", std::nullopt,
                      fmt::format("{:#x} + sh_size {:#x} exceeds file size {:#x}", sh.sh_offset,
                                  sh.sh_size, file_.size()));
  }
  return *b;
}

Result<ByteView> ElfImage::segment_bytes(const ProgramHeader& ph) const {
  auto b = file_.sub(ph.p_offset, ph.p_filesz);
  if (!b) {
    return make_error(describe(ph), "p_offset", std::nullopt,
                      fmt::format("{:#x} + p_filesz {:#x} exceeds file size {:#x}", ph.p_offset,
                                  ph.p_filesz, file_.size()));
  }
  return *b;
}

std::optional<uint64_t> ElfImage::vaddr_to_offset(uint64_t vaddr) const {
  bool any_load = false;
  for (const auto& p : segments_) {
    if (p.p_type != PT_LOAD) continue;
    any_load = true;
    if (vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz)
      return p.p_offset + (vaddr - p.p_vaddr);
  }
  if (any_load) return std::nullopt;
  for (const auto& s : sections_) {
    if (!s.is_alloc() || !s.has_file_bytes()) continue;
    if (vaddr >= s.sh_addr && vaddr - s.sh_addr < s.sh_size)
      return s.sh_offset + (vaddr - s.sh_addr);
  }
  return std::nullopt;
}

std::optional<ByteView> ElfImage::bytes_at_vaddr(uint64_t vaddr, uint64_t len) const {
  for (const auto& p : segments_) {
    if (p.p_type != PT_LOAD) continue;
    if (vaddr < p.p_vaddr || vaddr - p.p_vaddr >= p.p_filesz) continue;
    uint64_t rel = vaddr - p.p_vaddr;
    if (len > p.p_filesz - rel) return std::nullopt;
    return file_.sub(p.p_offset + rel, len);
  }
  if (!segments_.empty()) return std::nullopt;
  auto off = vaddr_to_offset(vaddr);
  if (!off) return std::nullopt;
  return file_.sub(*off, len);
}

const SectionHeader* ElfImage::section_for_vaddr(uint64_t vaddr) const {
  for (const auto& s : sections_) {
    if (s.is_alloc() && vaddr >= s.sh_addr && vaddr - s.sh_addr < s.sh_size) return &s;
  }
  return nullptr;
}

const SectionHeader* ElfImage::section_for_offset(uint64_t offset) const {
  for (const auto& s : sections_) {
    if (s.has_file_bytes() && s.sh_type != SHT_NULL && offset >= s.sh_offset &&
        offset - s.sh_offset < s.sh_size)
      return &s;
  }
  return nullptr;
}

std::string section_type_name(uint32_t t) {
  switch (t) {
    case SHT_NULL:
      return "NULL";
    case SHT_PROGBITS:
      return "PROGBITS";
    case SHT_SYMTAB:
      return "SYMTAB";
    case SHT_STRTAB:
      return "STRTAB";
    case SHT_RELA:
      return "RELA";
    case SHT_HASH:
      return "HASH";
    case SHT_DYNAMIC:
      return "DYNAMIC";
    case SHT_NOTE:
      return "NOTE";
    case SHT_NOBITS:
      return "NOBITS";
    case SHT_REL:
      return "REL";
    case SHT_DYNSYM:
      return "DYNSYM";
    case SHT_INIT_ARRAY:
      return "INIT_ARRAY";
    case SHT_FINI_ARRAY:
      return "FINI_ARRAY";
    case SHT_PREINIT_ARRAY:
      return "PREINIT_ARRAY";
    case SHT_GROUP:
      return "GROUP";
    case SHT_SYMTAB_SHNDX:
      return "SYMTAB_SHNDX";
    case SHT_GNU_HASH:
      return "GNU_HASH";
    case SHT_GNU_verdef:
      return "VERDEF";
    case SHT_GNU_verneed:
      return "VERNEED";
    case SHT_GNU_versym:
      return "VERSYM";
    case SHT_X86_64_UNWIND:
      return "X86_64_UNWIND";
    default:
      return hex_unknown(t);
  }
}

std::string segment_type_name(uint32_t t) {
  switch (t) {
    case PT_NULL:
      return "NULL";
    case PT_LOAD:
      return "LOAD";
    case PT_DYNAMIC:
      return "DYNAMIC";
    case PT_INTERP:
      return "INTERP";
    case PT_NOTE:
      return "NOTE";
    case PT_PHDR:
      return "PHDR";
    case PT_TLS:
      return "TLS";
    case PT_GNU_EH_FRAME:
      return "GNU_EH_FRAME";
    case PT_GNU_STACK:
      return "GNU_STACK";
    case PT_GNU_RELRO:
      return "GNU_RELRO";
    case PT_GNU_PROPERTY:
      return "GNU_PROPERTY";
    default:
      return hex_unknown(t);
  }
}

std::string file_type_name(uint16_t t) {
  switch (t) {
    case ET_NONE:
      return "NONE";
    case ET_REL:
      return "REL";
    case ET_EXEC:
      return "EXEC";
    case ET_DYN:
      return "DYN";
    case ET_CORE:
      return "CORE";
    default:
      return hex_unknown(t);
  }
}

std::string machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64:
      return "X86_64";
    case EM_386:
      return "386";
    case EM_AARCH64:
      return "AARCH64";
    case EM_PPC64:
      return "PPC64";
    case EM_CUDA:
      return "CUDA";
    default:
      return hex_unknown(m);
  }
}

std::string segment_flags_string(uint32_t f) {
  std::string s;
  s.push_back((f & PF_R) != 0 ? 'R' : ' ');
  s.push_back((f & PF_W) != 0 ? 'W' : ' ');
  s.push_back((f & PF_X) != 0 ? 'E' : ' ');
  return s;
}

}  // namespace cudatool::elf
