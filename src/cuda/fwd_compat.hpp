// The `.note.cuda.fwd_compatibility` note that newer libcuda builds carry (seen in 570+ compat
// libraries; absent from 470–555): owner "NVIDIA Corporation", a JSON descriptor such as
//   {"Format": 1, "CUDA Version": "13.1", "Driver": [535, 550, 570, …], "Device": [1, 2, 7, …]}
// naming the CUDA version, the kernel-driver branches this userspace driver may run on, and the
// device generations it supports. The NVIDIA Container Toolkit reads it the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "elf/elf_image.hpp"

namespace cudatool::cuda {

inline constexpr const char* kFwdCompatSection = ".note.cuda.fwd_compatibility";

struct FwdCompatNote {
  std::string owner;       // note name
  uint32_t note_type = 0;  // n_type as found (undocumented)
  std::string raw_json;    // the descriptor text, NULs trimmed
  std::optional<int64_t> format;
  std::optional<std::string> cuda_version;
  std::vector<int64_t> driver_branches;
  std::vector<int64_t> device_generations;
  // Keys other than the four above, kept so that a new field is visible rather than lost.
  std::vector<std::string> other_keys;
  uint64_t offset = 0;  // file offset of the note
};

// Reads the note if the section exists. nullopt when absent; an error when present but
// unreadable (bad note framing, descriptor that is not JSON of the expected shape).
Result<std::optional<FwdCompatNote>> read_fwd_compat_note(const elf::ElfImage& elf);
// Decodes a descriptor (exposed for tests and fuzzing).
Result<FwdCompatNote> parse_fwd_compat_json(std::string_view json);

}  // namespace cudatool::cuda
