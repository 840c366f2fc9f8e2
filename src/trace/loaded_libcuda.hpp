// The libcuda a recorded program loaded, from the trace's module records (docs/trace-format.md,
// "Module records"). A trace recorded where /proc/driver/nvidia/version is missing (a container
// or sandbox that proxies /dev/nvidia*, a machine without the module) names no kernel driver
// version in its header; libcuda and the kernel module of one installation share their version,
// so the decoders choose their tables by the library's (decode, stats, export, ab, replay).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "trace/trace_file.hpp"

namespace cudatool::trace {

struct LoadedLibcuda {
  std::string path;     // as the process mapped it
  std::string version;  // "580.159.04": of its file name, or of the file it links to here
};

// Reads `reader` (from its start) up to the first ioctl — every module record a call's stack
// needs precedes the call — and looks for a module named libcuda.so*. Its version comes from its
// name (libcuda.so.580.159.04) or, when that holds none (libcuda.so.1), from the name of the file
// the path resolves to on this machine. Nothing when the trace has no module records, no libcuda
// among them, or no version in either name.
std::optional<LoadedLibcuda> loaded_libcuda(TraceReader& reader);
// Neither `driver_version` nor `driver_version_line`: the tables are then the libcuda's.
bool names_no_driver_version(const Header& h);
// The first module of `modules` named libcuda.so* whose version its names give.
std::optional<LoadedLibcuda> libcuda_among(std::span<const Module> modules);

// The same for a trace whose header names no driver version (neither `driver_version` nor
// `driver_version_line`) and which holds module records; nothing otherwise, or when the file
// cannot be read.
std::optional<LoadedLibcuda> loaded_libcuda_if_unversioned(const std::string& trace_path);
std::optional<LoadedLibcuda> loaded_libcuda_if_unversioned(const std::string& bytes,
                                                           const std::string& name);

}  // namespace cudatool::trace
