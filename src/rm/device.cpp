// Device nodes by path (rm/device.hpp).
#include "rm/device.hpp"

#include <algorithm>
#include <cstring>

namespace cudatool::rm {

namespace {

// a == lit, compared with a fixed-size memcmp the compiler turns into a few loads (an out-of-line
// string_view compare per candidate name made this function 150 instructions a call).
template <size_t N>
bool is(std::string_view a, const char (&lit)[N]) {
  return a.size() == N - 1 && std::memcmp(a.data(), lit, N - 1) == 0;
}

}  // namespace

// By the last component of the path, as the recorders classify device paths
// (rm/nv_ioctl_abi.h): a trace recorded with --devices on nodes outside /dev (a container's
// mount, the test fixtures' fake nodes) decodes alike.
Device classify_device(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // Anything under or named /nvidia-caps…. Directly in /dev (every call of a trace, once per
  // event) that can only be the name itself: no search of the whole path.
  bool in_dev = slash == 4 && std::memcmp(path.data(), "/dev/", 5) == 0;
  bool caps = in_dev ? base.size() >= 11 && std::memcmp(base.data(), "nvidia-caps", 11) == 0
                     : path.find("/nvidia-caps") != std::string_view::npos;
  if (caps) return Device::kCaps;
  if (base.size() < 6 || std::memcmp(base.data(), "nvidia", 6) != 0) return Device::kUnknown;
  std::string_view rest = base.substr(6);
  if (is(rest, "ctl")) return Device::kControl;
  if (is(rest, "-uvm")) return Device::kUvm;
  if (is(rest, "-uvm-tools")) return Device::kUvmTools;
  if (is(rest, "-modeset")) return Device::kModeset;
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
