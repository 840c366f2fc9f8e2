// What a file given to `cudatool import` is, before it is converted: what is plainly not a
// capture is refused at its first line, and the driver version the capture's own calls name
// (the capture format has no header to carry one) is found.
#pragma once

#include <optional>
#include <string>

#include "base/error.hpp"
#include "trace/event.hpp"

namespace cudatool::trace {

// An error for a file that is plainly not a capture of the JSON-lines format: an empty one (no
// line at all, compressed or not), a cudatool trace (a trace is read as it is), or one whose first
// line is not a JSON object (a library, a package, a JSON array, text), named by its first bytes.
// An unreadable file is an error too.
Status check_capture_start(const std::string& path);

// A driver version and the call it was read from ("NV_ESC_CHECK_VERSION_STR versionString,
// line 3").
struct NamedVersion {
  std::string version;  // "580.159.04"
  std::string source;
};

// The kernel driver version one event names, with no line number in the source:
//   - NV_ESC_CHECK_VERSION_STR: versionString after the call (the kernel module's own version
//     after a strict check that passed, a query, or a mismatch: RmPerformVersionCheck, osapi.c),
//     else before it (the client's);
//   - NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: driverVersionBuffer of the parameters after
//     the call, read with the layout of a branch whose parameter size is the buffer's.
// Only text of the form digits.digits[.digits] counts.
std::optional<NamedVersion> version_named_by(const Event& ev);

// The first version a capture's calls name (version_named_by, with the line), or nullopt.
std::optional<NamedVersion> capture_driver_version(const std::string& path);

}  // namespace cudatool::trace
