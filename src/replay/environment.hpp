// The system a replayed program sees (docs/replay.md, "Environment"): a private directory tree
// that the replay shim redirects the driver's paths into (/proc/driver/nvidia, /sys/module/nvidia*,
// /sys/bus/pci/devices, …), and the device nodes it answers stat for. Built from the recording's
// environment events (trace format v2) where it has them, else from its header and its
// NV_ESC_CARD_INFO answer by documented defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "replay/answers.hpp"

namespace cudatool::replay {

struct Environment {
  std::string root;   // the tree
  std::string globs;  // paths redirected into it (comma-separated)
  std::vector<DeviceNode> devices;
  bool recorded = false;           // from the trace's environment events
  std::string gpu_bdf;             // "0000:18:00.0"
  uint32_t gpu_pci_id = 0;         // vendor << 16 | device
  std::vector<std::string> files;  // paths (as the program names them) the tree holds
  // What the tree holds that neither the environment events nor the defaults gave: "seq 1
  // NV_ESC_SYS_PARAMS: /sys/devices/system/memory/block_size_bytes answered with …".
  std::vector<std::string> synthesized;
};

// The host file libcuda reads the memory block size from (and passes on in NV_ESC_SYS_PARAMS).
inline constexpr const char* kMemblockPath = "/sys/devices/system/memory/block_size_bytes";

// The default globs of the environment paths (those of docs/tracing.md's recorder).
inline constexpr const char* kDefaultEnvGlobs =
    "/proc/driver/nvidia*,/sys/module/nvidia*,/sys/bus/pci/devices*,/sys/bus/pci/drivers/nvidia*";

// Builds the tree under `root` (created; must not exist). Errors: the tree cannot be written.
Result<Environment> build_environment(const Recording& rec, const std::string& root);

// The 256-byte PCI configuration space the default environment gives the GPU (tests read it).
std::vector<uint8_t> default_config_space(uint32_t pci_id, uint64_t bar0, uint64_t bar1,
                                          uint8_t irq);

}  // namespace cudatool::replay
