// Device nodes by path (rm/device.hpp).
#include "rm/device.hpp"

#include <algorithm>

namespace cudatool::rm {

// By the last component of the path, as the recorders classify device paths
// (rm/nv_ioctl_abi.h): a trace recorded with --devices on nodes outside /dev (a container's
// mount, the test fixtures' fake nodes) decodes alike.
Device classify_device(std::string_view path) {
  if (path.find("/nvidia-caps") != std::string_view::npos) return Device::kCaps;
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  constexpr std::string_view kNv = "nvidia";
  if (base.substr(0, kNv.size()) != kNv) return Device::kUnknown;
  std::string_view rest = base.substr(kNv.size());
  if (rest == "ctl") return Device::kControl;
  if (rest == "-uvm") return Device::kUvm;
  if (rest == "-uvm-tools") return Device::kUvmTools;
  if (rest == "-modeset") return Device::kModeset;
  if (!rest.empty() &&
      std::all_of(rest.begin(), rest.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return Device::kGpu;
  }
  return Device::kOtherNvidia;
}

std::string_view device_name(Device d) {
  switch (d) {
    case Device::kControl:
      return "nvidiactl";
    case Device::kGpu:
      return "gpu";
    case Device::kUvm:
      return "uvm";
    case Device::kUvmTools:
      return "uvm-tools";
    case Device::kModeset:
      return "modeset";
    case Device::kCaps:
      return "caps";
    case Device::kOtherNvidia:
      return "nvidia-other";
    case Device::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace cudatool::rm
