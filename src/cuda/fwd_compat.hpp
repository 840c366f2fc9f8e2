// The `.note.cuda.fwd_compatibility` note that newer libcuda builds carry (570+; absent from
// Debian's 470–555): owner "NVIDIA Corporation", note type 0, and a NUL-terminated JSON
// descriptor naming the CUDA version, the kernel-driver branches this userspace driver may run
// on, and the device generations it supports. libcuda 580.159.04 writes it compactly, as
// `readelf -n` shows:
//   {"format":1,"CUDA version":"13.0","driver":[535,550,565,570,575,580],"device":[1,2,7,…,14]}
// Keys are matched as NVIDIA writes them (case and spaces included); any other key is kept in
// `other_keys` so that a new or renamed field is visible rather than lost, and a known key that
// is missing is listed in `missing_keys`. List elements may also be ranges ("7..14", as NVIDIA's
// own prose abbreviates the device list), given as strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::cuda {

inline constexpr const char* kFwdCompatSection = ".note.cuda.fwd_compatibility";

// The descriptor's keys as libcuda 580.159.04 writes them.
inline constexpr const char* kFwdCompatFormatKey = "format";
inline constexpr const char* kFwdCompatCudaVersionKey = "CUDA version";
inline constexpr const char* kFwdCompatDriverKey = "driver";
inline constexpr const char* kFwdCompatDeviceKey = "device";
// A range "a..b" may name at most this many members (a hostile "0..4000000000" must not make
// a list of four billion numbers).
inline constexpr int64_t kFwdCompatMaxRange = 4096;

struct FwdCompatNote {
  std::string owner;       // note name
  uint32_t note_type = 0;  // n_type as found (0 in 580.159.04; undocumented)
  std::string raw_json;    // the descriptor text, NULs trimmed
  std::optional<int64_t> format;
  std::optional<std::string> cuda_version;
  std::vector<int64_t> driver_branches;     // ranges expanded, in the order written
  std::vector<int64_t> device_generations;  // ranges expanded, in the order written
  // Keys other than the four above, kept so that a new field is visible rather than lost.
  std::vector<std::string> other_keys;
  // Which of the four keys the descriptor lacks (in the order above).
  std::vector<std::string> missing_keys;
  uint64_t offset = 0;  // file offset of the note
};

// Reads the note if the section exists. nullopt when absent; an error when present but
// unreadable (bad note framing, descriptor that is not JSON of the expected shape).
Result<std::optional<FwdCompatNote>> read_fwd_compat_note(const elf::ElfImage& elf);
// Decodes a descriptor (exposed for tests and fuzzing). `offset` is the descriptor's file
// offset, for error messages.
Result<FwdCompatNote> parse_fwd_compat_json(std::string_view json,
                                            std::optional<uint64_t> offset = std::nullopt);

}  // namespace cudatool::cuda
