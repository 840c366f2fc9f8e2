// One CUDA ELF image ("cubin", e_machine EM_CUDA = 190): where it ends, its target
// (cubin_arch.hpp), its sections and its functions with the .nv.info attributes ptxas recorded
// for them (register count, parameter layout, frame and stack sizes).
//
// The structural reading is elf::ElfImage's (it accepts any machine); this file adds what is
// CUDA's: section types SHT_CUDA_*, STO_CUDA_ENTRY, SHI_REGISTERS in a text section's sh_info,
// and the .nv.info attribute streams (nv_info.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "cuda/cubin_arch.hpp"
#include "cuda/nv_info.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::cuda {

// st_other bit of a kernel entry point (a __global__ function) in a cubin's .symtab.
inline constexpr uint8_t kStoCudaEntry = 0x10;

struct Kernel {
  uint32_t symbol_index = 0;
  std::string_view name;
  std::string_view section;  // ".text.<name>"
  uint16_t shndx = 0;
  uint64_t size = 0;    // st_size: bytes of SASS
  bool entry = false;   // STO_CUDA_ENTRY: a kernel, not a device function
  uint8_t binding = 0;  // STB_*
  // Register count: EIATTR_REGCOUNT when present, else the text section's SHI_REGISTERS. The
  // two can differ (CUDA 12.4 images of libcuda 550 record 32 in .nv.info and 24 in sh_info
  // for vfprintf; `cuobjdump --dump-resource-usage` prints the sh_info one), so both are kept.
  std::optional<uint32_t> registers;
  std::string_view registers_source;  // "EIATTR_REGCOUNT" or "sh_info"
  std::optional<uint32_t> sh_info_registers;
  std::optional<uint32_t> frame_size;
  std::optional<uint32_t> min_stack_size;
  std::optional<uint32_t> max_stack_size;
  std::optional<uint32_t> crs_stack_size;
  std::optional<uint32_t> maxreg_count;
  std::optional<uint32_t> cuda_api_version;
  std::optional<uint32_t> param_size;          // EIATTR_CBANK_PARAM_SIZE: bytes of parameters
  std::optional<uint32_t> param_cbank_offset;  // EIATTR_PARAM_CBANK: where they start in c[0]
  std::vector<KernelParam> params;             // EIATTR_KPARAM_INFO, by ordinal
  std::optional<std::array<uint32_t, 3>> max_threads;
  std::optional<std::array<uint32_t, 3>> reqntid;
  std::optional<uint64_t> shared_size;     // size of .nv.shared.<name>
  std::optional<uint64_t> constant0_size;  // size of .nv.constant0.<name>
  std::vector<uint8_t> other_attributes;   // EIATTR_* numbers seen but not decoded above
};

struct Cubin {
  elf::ElfImage elf;
  CubinTarget target;
  std::vector<Kernel> kernels;  // every defined STT_FUNC symbol, in symbol-table order
  uint64_t nv_info_records = 0;
  // Attributes of .nv.info that name no function of the image (EIATTR numbers).
  std::vector<uint8_t> global_attributes;
  // Attributes of .nv.info that name a symbol which is not a function defined in the image
  // (an undefined callee): {symbol name, EIATTR number, value}.
  struct SymbolAttribute {
    std::string_view symbol;
    uint8_t attr = 0;
    uint32_t value = 0;
  };
  std::vector<SymbolAttribute> other_symbol_attributes;
};

// How many bytes the image that starts at byte 0 of `from_magic` spans according to its own
// headers: the ELF header, the program and section header tables, and every section and
// segment with file bytes. Fails when the header is not a little-endian ELF64 with e_machine 190
// or when any of those runs past the end of `from_magic` (a truncated image or a lying size).
Result<uint64_t> cuda_elf_extent(ByteView from_magic);
// The same for any machine (used to size the host ELF files that are embedded as data).
Result<uint64_t> elf_extent(ByteView from_magic);

// Decodes one image (exactly its bytes). Fails only when the ELF header tables cannot be read;
// damage deeper inside (a bad note, a malformed .nv.info record, a symbol table that does not
// fit) goes to `diag` and the rest is still decoded.
Result<Cubin> parse_cubin(ByteView image, Diagnostics* diag);

// "CUDA_INFO" for SHT_CUDA_INFO (0x70000000), …; the generic names otherwise.
std::string cuda_section_type_name(uint32_t sh_type);

}  // namespace cudatool::cuda
