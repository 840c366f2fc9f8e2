// A separate symbol file for a stripped library: an ELF file laid out like the ones
// `objcopy --only-keep-debug` makes, that gdb, perf and addr2line load as the library's debug
// file. It carries:
//   - the library's ELF header fields and program headers (p_filesz 0, p_offset kept so that
//     p_vaddr - p_offset, which perf uses to place symbols, is the library's);
//   - every SHF_ALLOC section header at its address, as SHT_NOBITS, except the notes, which
//     keep their bytes (gdb matches the file to the library by the NT_GNU_BUILD_ID note);
//   - .symtab/.strtab: exports under their names and binding, every other function of the
//     FunctionMap as a local FUNC symbol with the size of its FDE (names from other sources,
//     else fn_<hex start>); PLT stubs are left to the debuggers, which name them foo@plt.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"

namespace cudatool {

class DriverImage;
class FunctionMap;

struct SymbolFileStats {
  uint64_t symbols = 0;      // in .symtab, without the null symbol
  uint64_t exported = 0;     // exports carried under their names
  uint64_t other_names = 0;  // names from other sources (local symbols)
  uint64_t derived = 0;      // functions named fn_<hex>
  uint64_t plt_skipped = 0;  // functions in .plt* sections, left to the debuggers
  uint64_t unplaced = 0;     // symbols outside every section, left out
  uint64_t sections = 0;     // section headers written, the null one included
  std::optional<std::string> build_id;
};

// The bytes of the symbol file. Fails only when the library cannot be described (more
// sections than ELF can number without extensions).
Result<std::vector<uint8_t>> build_symbol_file(DriverImage& img, const FunctionMap& map,
                                               SymbolFileStats* stats);

// ".build-id/d4/7d5faef0….debug": where gdb's debug-file-directory lookup expects the file.
std::string build_id_debug_path(std::string_view build_id_hex);

// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
// reader never sees half a file; creates missing parent directories when `make_dirs`.
Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes, bool make_dirs);
// Makes `path` a hard link of `existing` through a temporary name and a rename (replacing what
// was there); false when the file system refuses (then write a copy).
bool link_file_atomic(const std::string& existing, const std::string& path);

}  // namespace cudatool
