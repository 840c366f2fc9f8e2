// ELF64 little-endian views: file header, section headers, program headers, and address
// translation. Shared by the libcuda reader and the cubin reader (CUDA ELF, e_machine 190).
//
// Layouts: System V gABI, "ELF Header", "Sections", "Program Header" (ELF-64 Object File
// Format, version 1.5). Every header is read field by field from the mapped bytes.
#pragma once

#include <elf.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool::elf {

struct FileHeader {
  uint8_t ei_class = 0;
  uint8_t ei_data = 0;
  uint8_t ei_version = 0;
  uint8_t ei_osabi = 0;
  uint8_t ei_abiversion = 0;
  uint16_t e_type = 0;
  uint16_t e_machine = 0;
  uint32_t e_version = 0;
  uint64_t e_entry = 0;
  uint64_t e_phoff = 0;
  uint64_t e_shoff = 0;
  uint32_t e_flags = 0;
  uint16_t e_ehsize = 0;
  uint16_t e_phentsize = 0;
  uint16_t e_phnum = 0;
  uint16_t e_shentsize = 0;
  uint16_t e_shnum = 0;
  uint16_t e_shstrndx = 0;
};

struct SectionHeader {
  uint32_t index = 0;
  std::string_view name;  // from .shstrtab; "" when the name offset is bad (reported)
  uint32_t sh_name = 0;
  uint32_t sh_type = 0;
  uint64_t sh_flags = 0;
  uint64_t sh_addr = 0;
  uint64_t sh_offset = 0;
  uint64_t sh_size = 0;
  uint32_t sh_link = 0;
  uint32_t sh_info = 0;
  uint64_t sh_addralign = 0;
  uint64_t sh_entsize = 0;
  // False when [sh_offset, sh_offset+sh_size) is not inside the file (reported once).
  bool in_file = true;

  [[nodiscard]] bool is_alloc() const { return (sh_flags & SHF_ALLOC) != 0; }
  [[nodiscard]] bool is_exec() const { return (sh_flags & SHF_EXECINSTR) != 0; }
  [[nodiscard]] bool has_file_bytes() const { return sh_type != SHT_NOBITS; }
};

struct ProgramHeader {
  uint32_t index = 0;
  uint32_t p_type = 0;
  uint32_t p_flags = 0;
  uint64_t p_offset = 0;
  uint64_t p_vaddr = 0;
  uint64_t p_paddr = 0;
  uint64_t p_filesz = 0;
  uint64_t p_memsz = 0;
  uint64_t p_align = 0;
  bool in_file = true;
};

// Names for printing ("PROGBITS", "LOAD", "DYN", "X86_64"); hex with '?' when unknown.
std::string section_type_name(uint32_t sh_type);
std::string segment_type_name(uint32_t p_type);
std::string file_type_name(uint16_t e_type);
std::string machine_name(uint16_t e_machine);
// "R E", "RW " as readelf prints p_flags.
std::string segment_flags_string(uint32_t p_flags);

// Structural view of one ELF64 LE file. Cheap to build: reads only the file header, the
// program header table and the section header table with the section-name string table.
class ElfImage {
 public:
  // Fails (with a message that names the structure, offset and reason) when the file is not a
  // readable ELF64 little-endian file or its header tables do not fit. Problems with single
  // sections or segments (offsets past the end, bad names) go to `diag` and parsing goes on.
  static Result<ElfImage> parse(ByteView file, Diagnostics* diag = nullptr);

  [[nodiscard]] const FileHeader& header() const { return header_; }
  [[nodiscard]] std::span<const SectionHeader> sections() const { return sections_; }
  [[nodiscard]] std::span<const ProgramHeader> segments() const { return segments_; }
  [[nodiscard]] ByteView file() const { return file_; }

  // First section with this name, or null.
  [[nodiscard]] const SectionHeader* section(std::string_view name) const;
  // First section of this type, or null.
  [[nodiscard]] const SectionHeader* section_of_type(uint32_t sh_type) const;
  [[nodiscard]] const SectionHeader* section_at(uint32_t index) const {
    return index < sections_.size() ? &sections_[index] : nullptr;
  }
  // The section's file bytes (empty for SHT_NOBITS); an error when they are not in the file.
  [[nodiscard]] Result<ByteView> section_bytes(const SectionHeader& sh) const;
  // The segment's file bytes (p_filesz of them).
  [[nodiscard]] Result<ByteView> segment_bytes(const ProgramHeader& ph) const;

  // Translates a virtual address to a file offset through the PT_LOAD segments (file-backed
  // part only); falls back to SHF_ALLOC sections when the file has no program headers.
  [[nodiscard]] std::optional<uint64_t> vaddr_to_offset(uint64_t vaddr) const;
  // `len` file-backed bytes at `vaddr`, when all of them lie in one segment.
  [[nodiscard]] std::optional<ByteView> bytes_at_vaddr(uint64_t vaddr, uint64_t len) const;
  // The section whose [sh_addr, sh_addr+sh_size) holds vaddr (SHF_ALLOC sections only).
  [[nodiscard]] const SectionHeader* section_for_vaddr(uint64_t vaddr) const;
  // The section whose file range holds offset (sections with file bytes only).
  [[nodiscard]] const SectionHeader* section_for_offset(uint64_t offset) const;

 private:
  ByteView file_;
  FileHeader header_;
  std::vector<SectionHeader> sections_;
  std::vector<ProgramHeader> segments_;
};

// Describes a section for messages: "section [5] .rodata".
std::string describe(const SectionHeader& sh);
std::string describe(const ProgramHeader& ph);

}  // namespace cudatool::elf
