// The NVIDIA device nodes a call can be made on, by path (as the recorders classify them:
// rm/nv_ioctl_abi.h nvtr_dev_kind_of_path).
#pragma once

#include <cstdint>
#include <string_view>

namespace cudatool::rm {

enum class Device : uint8_t {
  kUnknown,      // not an NVIDIA device path (or none recorded)
  kControl,      // /dev/nvidiactl
  kGpu,          // /dev/nvidia0, /dev/nvidia1, …
  kUvm,          // /dev/nvidia-uvm
  kUvmTools,     // /dev/nvidia-uvm-tools
  kModeset,      // /dev/nvidia-modeset
  kCaps,         // /dev/nvidia-caps/*, /dev/nvidia-caps-imex-channels/*
  kOtherNvidia,  // another /dev/nvidia* node (nvswitch, nvlink, …)
};
Device classify_device(std::string_view path);
std::string_view device_name(Device d);  // "nvidiactl", "gpu", "uvm", …

}  // namespace cudatool::rm
