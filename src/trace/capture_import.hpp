// `cudatool import`: the capture format of tests/data/captures (one JSON object per line: seq,
// t_us, tid, sys, path, flags, fd, addr, len, prot, off, req, ret, pre, post, nptr, npre, npost;
// see its README) into a trace. Nothing of a capture line is lost: fields map as below, fields this
// build does not know are kept as extra members ("capture.<name>" when a trace event member has
// that name, e.g. a "t" field, so that no name appears twice in a line).
//
//   t_us (µs at completion)   -> t (ns; no duration: captures know only completion time)
//   tid                       -> tid, pid 0 (captures record no pid)
//   ret -errno                -> ret -1, errno
//   pre/post                  -> arg buffer (addr 0: captures record no argument address;
//                                bounded for /dev/nvidia-uvm, whose 256 bytes are a bound)
//   nptr/npre/npost           -> nested buffer, role "params" (RM control/alloc) or "xfer"
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"
#include "rm/nv_ioctl_abi.h"
#include "trace/event.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::trace {

struct ImportOptions {
  std::optional<std::string> driver_version;  // --driver-version
  std::string source_name;                    // header "source" (default: the capture path)
  // The traced program's exit status, when the user knows it (--exit-status): the capture
  // format holds none, so the trailer says null without it.
  std::optional<int> exit_status;
};

struct ImportResult {
  uint64_t lines = 0;   // non-empty lines read
  uint64_t events = 0;  // events written
  std::map<std::string, uint64_t> by_sys;
  std::string compression;  // of the capture: "none", "xz", "zstd"
};

// The capture format read this many bytes of a /dev/nvidia-uvm argument (fewer at the end of a
// page): an import marks the read `bounded`, and ab compares no more of the other side's.
inline constexpr uint64_t kCaptureUvmBytes = 256;

// One capture line into `ev` (storage reused). Errors name the field and the offset.
Status parse_capture_line(std::string_view line, uint64_t offset, Event& ev);

// The header an import writes.
Header import_header(const ImportOptions& o, const std::string& capture_path);

// What the capture format lacks of an imported RM escape, as the recorders would have read it
// (rm/nv_ioctl_abi.h, RM tables `rm` of the import's driver version), added to ev.unrecorded:
// allocation parameters sized by the class ("alloc parameters not recorded: capture format"),
// the buffers behind pointer members of recorded parameters, NVOS64 rights, the parameters of an
// escape an XFER wraps ("capture format").
void note_unrecorded(const nvtr_rm_branch* rm, Event& ev);

// Reads the capture at `path` (plain, xz or zstd), writes header, events and a trailer to `out`.
// Lines that are not valid capture records are reported to `diag` (one error each) and skipped;
// an unreadable file is an error.
Result<ImportResult> import_capture(const std::string& path, const ImportOptions& o,
                                    TraceWriter& out, Diagnostics& diag);

}  // namespace cudatool::trace
