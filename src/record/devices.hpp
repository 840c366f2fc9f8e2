// Which paths count as devices whose calls are recorded (--devices), and the per-process tables
// the ptrace recorder keeps: fd -> device path, and device mappings (for munmap).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cudatool::record {

inline constexpr std::string_view kDefaultDevices = "/dev/nvidia*";
// The environment paths whose calls are recorded by default (--env; docs/trace-format.md,
// "Environment events"): what libcuda reads of the driver's view of the system — the driver's
// procfs files, the kernel modules' sysfs directories, the PCI devices (their directory too:
// libcuda lists it), the device nodes themselves (stat, mknod, …), and /proc/devices (where the
// dynamic majors of nvidia-uvm and nvidia-caps are looked up).
inline constexpr std::string_view kDefaultEnv =
    "/proc/driver/nvidia*,/sys/module/nvidia*,/sys/bus/pci/devices,/sys/bus/pci/devices/*,"
    "/dev/nvidia*,/proc/devices";

// A comma-separated list of globs (base/glob_match.h: fnmatch(3) without flags, so '*' also matches
// '/' and "/dev/nvidia*" covers /dev/nvidia-caps/…). An empty list matches nothing. The preload
// shim matches with the same code.
class DeviceMatcher {
 public:
  explicit DeviceMatcher(std::string_view globs);
  [[nodiscard]] bool matches(const std::string& path) const;
  [[nodiscard]] const std::string& spec() const { return spec_; }

 private:
  std::string spec_;
  std::vector<std::string> globs_;
};

// Device paths are few; fds refer to them by index.
class PathTable {
 public:
  uint32_t intern(const std::string& path);
  [[nodiscard]] const std::string& path(uint32_t id) const { return paths_[id]; }

 private:
  std::vector<std::string> paths_;
  std::unordered_map<std::string, uint32_t> ids_;
};

struct FdTable {
  std::unordered_map<int, uint32_t> fds;  // fd -> path id, device fds only
};

struct DeviceMapping {
  uint64_t len = 0;
  uint32_t path_id = 0;
};
// start -> mapping, device mappings of one address space only.
using MappingTable = std::map<uint64_t, DeviceMapping>;

// Removes [addr, addr+len) from the table (splitting mappings it cuts). Returns the path id of
// the first device mapping it overlapped, or -1 when it overlapped none.
int64_t unmap_range(MappingTable& maps, uint64_t addr, uint64_t len);
// True when [addr, addr+len) overlaps a device mapping.
bool overlaps(const MappingTable& maps, uint64_t addr, uint64_t len);

// "/a/b/../c" with a base directory for relative paths; "." and ".." folded textually (the
// path as the program named it, not resolved through symlinks).
std::string absolute_path(std::string_view base_dir, std::string_view path);

}  // namespace cudatool::record
