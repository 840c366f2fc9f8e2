#include "trace/event.hpp"

#include <array>
#include <utility>

namespace cudatool::trace {
namespace {

constexpr std::array<std::pair<Sys, std::string_view>, 16> kNames{{
    {Sys::kOpen, "open"},
    {Sys::kClose, "close"},
    {Sys::kDup, "dup"},
    {Sys::kIoctl, "ioctl"},
    {Sys::kMmap, "mmap"},
    {Sys::kMunmap, "munmap"},
    {Sys::kExecve, "execve"},
    {Sys::kFork, "fork"},
    {Sys::kExit, "exit"},
    {Sys::kStat, "stat"},
    {Sys::kFile, "file"},
    {Sys::kMknod, "mknod"},
    {Sys::kSymlink, "symlink"},
    {Sys::kReadlink, "readlink"},
    {Sys::kChmod, "chmod"},
    {Sys::kUnlink, "unlink"},
}};

}  // namespace

std::string_view sys_name(Sys s) {
  for (const auto& [k, n] : kNames) {
    if (k == s) return n;
  }
  return "unknown";
}

bool is_environment(Sys s) {
  return s >= Sys::kStat && s <= Sys::kUnlink;
}

Sys sys_from_name(std::string_view name) {
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
  }
  return Sys::kUnknown;
}

}  // namespace cudatool::trace
