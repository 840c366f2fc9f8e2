// The target of a CUDA ELF image (a cubin, e_machine EM_CUDA = 190): real and virtual SM
// architecture, addressing mode, the other e_flags bits, and the toolkit that built it.
//
// Two e_flags layouts exist, told apart by EI_ABIVERSION (LLVM BinaryFormat/ELF.h names them
// ELFABIVERSION_CUDA_V1 = 7 and ELFABIVERSION_CUDA_V2 = 8):
//   ABI 7 (CUDA <= 12): bits 0-7 the real SM (EF_CUDA_SM, 0x5a = sm_90), bits 16-23 the virtual
//          SM (EF_CUDA_VIRTUAL_SM), 0x100 EF_CUDA_TEXMODE_UNIFIED, 0x200
//          EF_CUDA_TEXMODE_INDEPENDENT, 0x400 EF_CUDA_64BIT_ADDRESS, 0x800 EF_CUDA_ACCELERATORS
//          on sm_90 and later (the "a" targets) but EF_CUDA_SW_1729687 before sm_90 — the names
//          and that split are cuobjdump's (`cuobjdump -sass` .headerflags of the images in
//          Debian's libcuda builds).
//   ABI 8 (CUDA 12.8+ for sm_100+, every target from CUDA 13): bits 8-15 the real SM
//          (EF_CUDA_SM_MASK 0xff00), 0x8 EF_CUDA_ACCELERATORS; the virtual SM is no longer in
//          e_flags but in the .note.nv.cuinfo note. CUDA 13 emits the same e_flags for sm_90
//          and sm_90a (and for sm_100 / sm_100a / sm_100f): the .note.nv.tkinfo note, which
//          records the ptxas command line ("-arch sm_90a -m 64"), tells them apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::cuda {

inline constexpr uint16_t kEmCuda = 190;
inline constexpr uint8_t kCudaAbiV7 = 7;
inline constexpr uint8_t kCudaAbiV8 = 8;

// .note.nv.tkinfo (note type 2000, owner "NVIDIA Corp"): the tool that wrote the image. The
// descriptor is {u32 version, u32 offsets of five strings} followed by the strings; the field
// names are ours, chosen for what the strings hold ("ptxas", "Cuda compilation tools, release
// 13.0, V13.0.88", "Build cuda_13.0.r13.0/…", "-arch sm_90a -m 64 ").
struct ToolkitNote {
  uint32_t version = 0;
  std::string_view object_name;
  std::string_view tool_name;
  std::string_view tool_version;
  std::string_view tool_branch;
  std::string_view tool_options;
  uint64_t offset = 0;  // file offset of the note
};

// .note.nv.cuinfo (note type 1000): {u16 version, u16 virtual SM, u16 toolkit version (130 for
// CUDA 13.0)}, padded to 8 bytes by ptxas (version 2). Version 1 (in .note.nv.cuver, seen in
// libcuda 580.159.04) has no toolkit field: toolkit_version is 0 for it.
struct CudaInfoNote {
  uint16_t version = 0;
  uint16_t virtual_sm = 0;
  uint32_t toolkit_version = 0;
  uint64_t offset = 0;
};

struct CubinTarget {
  uint8_t abi_version = 0;
  uint32_t e_flags = 0;
  uint32_t sm = 0;            // 90 for sm_90 and sm_90a; 0 when e_flags hold none
  std::string arch;           // "sm_90a"; "sm_?" when unknown
  std::string arch_evidence;  // what decided the suffix: "e_flags", ".note.nv.tkinfo …"
  std::optional<uint32_t> virtual_sm;
  std::string virtual_arch;              // "compute_90"; "" when unknown
  std::string virtual_evidence;          // "e_flags" or ".note.nv.cuinfo"
  std::optional<uint32_t> address_bits;  // 64 / 32; nullopt when the image does not say
  std::string address_evidence;
  std::vector<std::string> flag_names;  // known bits by name, unknown bits as "0x…?"
  uint32_t unknown_flag_bits = 0;
  // CUDA toolkit version as major*10+minor (124 = 12.4): e_version for ABI 7, the cuinfo note
  // for ABI 8.
  std::optional<uint32_t> toolkit_version;
  std::string toolkit_evidence;
  std::optional<ToolkitNote> tkinfo;
  std::optional<CudaInfoNote> cuinfo;
};

// Decodes what e_flags, EI_ABIVERSION and e_version alone say.
CubinTarget decode_e_flags(uint8_t abi_version, uint32_t e_flags, uint32_t e_version);

// Reads the .note.nv.* notes of the image and completes `t` from them (virtual SM and toolkit
// for ABI 8, the a/f suffix from the ptxas options). Damaged notes go to `diag`.
void refine_target_from_notes(const elf::ElfImage& elf, CubinTarget& t, Diagnostics* diag);

// The "-arch sm_90a" / "-arch=sm_100f" value in a ptxas command line: {90, "a"}.
struct ArchOption {
  uint32_t sm = 0;
  std::string suffix;
};
std::optional<ArchOption> arch_from_options(std::string_view options);

// "12.4" from 124.
std::string toolkit_version_string(uint32_t v);
// 130 from a tkinfo tool version "Cuda compilation tools, release 13.0, V13.0.0"; nullopt when
// it names no release of the major*10+minor form.
std::optional<uint32_t> release_from_tool_version(std::string_view tool_version);

// Orders architecture names by number, not as text: sm_50 < sm_90 < sm_90a < sm_100 < sm_100a <
// sm_100f < sm_121 (as text, sm_100 would sort before sm_50). Names are compared by their prefix
// ("sm_", "compute_"), then the number, then the suffix; a name without a number ("sm_?", "-")
// comes after the numbered ones of its prefix.
bool arch_less(std::string_view a, std::string_view b);
struct ArchLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return arch_less(a, b); }
};

}  // namespace cudatool::cuda
