// Naming the kernels of the compute launches a replay completed (docs/replay.md, "The fake
// GPU"): a QMD gives the address of the kernel's first instruction, and the fake GPU logs the
// code found there (libcuda puts a loaded module's code into GPU memory with the compute class's
// inline-to-memory methods, which the fake GPU carries out). The kernel is the function of a
// CUDA image the program loaded whose code is those bytes: every image of the candidate files
// (cubins, fatbins, host programs and libraries that embed them) is indexed by its kernels'
// code, with the bytes that relocations patch left out of the comparison.
//
// The parameters are cut from the constant buffer the launch used (c[0]) by the kernel's layout:
// EIATTR_PARAM_CBANK (where the parameters start) and EIATTR_KPARAM_INFO (each one's offset and
// size), as ptxas recorded them in the image.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "cuda/nv_info.hpp"

namespace cudatool::replay {

// One parameter of a launch: its bytes in the constant buffer, and as a little-endian number
// when it has 1, 2, 4 or 8 bytes.
struct LaunchParam {
  uint32_t ordinal = 0;
  uint32_t offset = 0;  // in the parameter block (c[0] from the kernel's PARAM_CBANK offset)
  uint32_t size = 0;
  std::vector<uint8_t> bytes;  // fewer than `size` when the constant buffer logged was shorter
  std::optional<uint64_t> value;
};

struct KernelMatch {
  std::string name;
  std::string image;  // the file, and where in it for an embedded image ("prog: fatbin entry 2")
  std::optional<uint32_t> param_base;  // EIATTR_PARAM_CBANK offset
  std::optional<uint32_t> param_size;  // EIATTR_CBANK_PARAM_SIZE
  std::vector<cuda::KernelParam> params;
  std::vector<std::string> also;  // other kernels with the same code (another name or image)
};

// The parameters of a kernel in c[0] as a launch saw it (cb0: the buffer's first bytes).
std::vector<LaunchParam> decode_params(const KernelMatch& k, ByteView cb0);

class KernelIndex {
 public:
  KernelIndex();
  ~KernelIndex();
  KernelIndex(KernelIndex&&) noexcept;
  KernelIndex& operator=(KernelIndex&&) noexcept;

  // Indexes the kernels of every CUDA image in the file; false when it holds none (or cannot be
  // read). A file already added is not read again.
  bool add_file(const std::string& path);
  // The kernel whose code starts with `code` (at least 16 bytes are compared; the shorter of the
  // two decides how many), or nothing.
  [[nodiscard]] std::optional<KernelMatch> match(ByteView code) const;
  [[nodiscard]] size_t kernels() const;
  [[nodiscard]] const std::vector<std::string>& files() const { return files_; }

 private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::string> files_;
};

}  // namespace cudatool::replay
