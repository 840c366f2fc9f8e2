// Symbol tables (.dynsym/.symtab) and GNU symbol versioning (.gnu.version, .gnu.version_r,
// .gnu.version_d). Layouts: gABI "Symbol Table"; LSB Core 5.0, "Symbol Versioning".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::elf {

struct Symbol {
  uint32_t index = 0;
  std::string_view name;
  uint32_t st_name = 0;
  uint8_t st_info = 0;
  uint8_t st_other = 0;
  uint16_t st_shndx = 0;
  uint64_t st_value = 0;
  uint64_t st_size = 0;

  [[nodiscard]] uint8_t type() const { return st_info & 0xf; }
  [[nodiscard]] uint8_t binding() const { return st_info >> 4; }
  [[nodiscard]] uint8_t visibility() const { return st_other & 0x3; }
  [[nodiscard]] bool defined() const { return st_shndx != SHN_UNDEF; }
};

std::string symbol_type_name(uint8_t type);        // FUNC, OBJECT, NOTYPE, IFUNC, …
std::string symbol_binding_name(uint8_t binding);  // GLOBAL, WEAK, LOCAL, UNIQUE
std::string symbol_visibility_name(uint8_t vis);   // DEFAULT, HIDDEN, …

// Reads the symbol table `symtab` (SHT_DYNSYM or SHT_SYMTAB) with the string table its sh_link
// names. Records with bad name offsets are kept with an empty name and reported.
Result<std::vector<Symbol>> read_symbols(const ElfImage& elf, const SectionHeader& symtab,
                                         Diagnostics* diag);
// .dynsym of the image; empty when there is none.
Result<std::vector<Symbol>> read_dynamic_symbols(const ElfImage& elf, Diagnostics* diag);

// A version that a symbol requires (from .gnu.version_r) or defines (.gnu.version_d).
struct VersionRef {
  std::string_view name;  // "GLIBC_2.2.5"
  std::string_view file;  // "libc.so.6" for a requirement; "" for a definition
  bool hidden = false;    // VERSYM_HIDDEN bit (a non-default definition: name@VER not @@VER)
  bool is_definition = false;
};

class SymbolVersions {
 public:
  // Reads .gnu.version (if any), .gnu.version_r and .gnu.version_d. A missing table is not an
  // error (older or unversioned objects have none).
  static Result<SymbolVersions> read(const ElfImage& elf, Diagnostics* diag);

  // The version of dynamic symbol `sym_index`; nothing when unversioned (index 0 or 1) or when
  // the object has no versioning.
  [[nodiscard]] std::optional<VersionRef> for_symbol(uint32_t sym_index) const;
  [[nodiscard]] bool present() const { return !versym_.empty(); }

  struct Need {
    std::string_view file;
    struct Aux {
      std::string_view name;
      uint16_t other = 0;  // the version index used in .gnu.version
      uint16_t flags = 0;
      uint32_t hash = 0;
    };
    std::vector<Aux> versions;
  };
  struct Def {
    uint16_t index = 0;
    uint16_t flags = 0;
    std::string_view name;
  };
  [[nodiscard]] const std::vector<Need>& needs() const { return needs_; }
  [[nodiscard]] const std::vector<Def>& defs() const { return defs_; }

 private:
  ByteView versym_;  // raw 16-bit entries, read on demand
  std::vector<Need> needs_;
  std::vector<Def> defs_;
  // version index -> (need index, aux index) or def index; built once.
  struct Slot {
    int32_t need = -1;
    int32_t aux = -1;
    int32_t def = -1;
  };
  std::vector<Slot> by_index_;
};

}  // namespace cudatool::elf
