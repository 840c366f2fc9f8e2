// Independent oracles for the driver-table tests: what readelf, gdb, objdump and the CUDA
// toolkit say about a file, parsed here at test time (never typed-in numbers).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness.hpp"

namespace cudatool::test {

// readelf -r -W: every R_X86_64_RELATIVE as r_offset -> addend, and the entry counts that
// readelf prints per relocation section.
struct ReadelfRelocs {
  std::unordered_map<uint64_t, uint64_t> relative;
  uint64_t total_entries = 0;  // sum of "contains N entries"
};
ReadelfRelocs readelf_relocs(const std::string& path);

// readelf --dyn-syms -W: defined symbols, name -> {value, type}.
struct ReadelfDefinedSymbol {
  uint64_t value = 0;
  std::string type;
};
std::map<std::string, ReadelfDefinedSymbol> readelf_defined_symbols(const std::string& path);

// The file's bytes, addressed by virtual address through readelf's section table.
class VaddrReader {
 public:
  explicit VaddrReader(const std::string& path);
  std::optional<std::string> bytes(uint64_t vaddr, uint64_t n) const;
  std::optional<uint64_t> u64(uint64_t vaddr) const;
  std::optional<std::string> cstring(uint64_t vaddr) const;
  const ReadelfSection* section_of(uint64_t vaddr) const;

 private:
  std::string data_;
  std::vector<ReadelfSection> sections_;
};

// Where the CUDA toolkit the checks compare with lives: $CUDATOOL_CUDA_HOME, else the
// configured default (/usr/local/cuda), else the Debian CUDA 12.4 pieces fetched by
// `tools/fetch-drivers.sh --cuda-toolkit` into $CUDATOOL_CUDA_CACHE or
// ~/.cache/cudatool/cuda-toolkit. `error` says how to get one when none is found.
struct CudaToolkit {
  std::string include_dir;  // holds cuda.h and cudaTypedefs.h
  std::string cudart;       // a libcudart.so.N file
  std::string origin;
  std::string error;
  [[nodiscard]] bool ok() const { return error.empty(); }
};
const CudaToolkit& cuda_toolkit();

// CUDA_SUCCESS / CUDA_ERROR_* = N from cuda.h's CUresult enum.
std::map<std::string, uint32_t> cuda_h_errors(const std::string& cuda_h);
// PFN_<name>_v<version>[_ptsz|_ptds] typedefs of every *Typedefs.h in the include directory:
// name -> {(version, per_thread)}.
std::map<std::string, std::set<std::pair<uint32_t, bool>>> pfn_typedefs(
    const std::string& include_dir);

// The export-table UUIDs libcudart asks for, found with objdump: 16-byte .rodata constants
// whose address is loaded into %rsi (cuGetExportTable's second argument) right before an
// indirect call through a function-pointer variable.
std::set<std::array<uint8_t, 16>> cudart_export_table_uuids(const std::string& cudart);

std::string uuid_text(const std::array<uint8_t, 16>& u);  // 8-4-4-4-12, memory order

}  // namespace cudatool::test
