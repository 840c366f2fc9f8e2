// Normalisation of the environment events (v2: stat, file, mknod, symlink, readlink, chmod,
// unlink; docs/ab.md "Environment events"): what a program read of the driver's view of the
// system is compared as it is — the answer (mode, rdev, size), the flags, the path and link
// target, a file's content byte by byte, a directory's names — except what differs between two
// identical runs:
//   - `op`, the call as the program made it, is shown but not compared: the two recorders name
//     the same call differently (preload: "fopen", "__xstat"; ptrace: "openat", "newfstatat");
//   - the return value of a file event (an fd, or 0 for fopen/opendir) is compared as success;
//   - an lstat (preload: `lstat`, `__lxstat`) compares as the stat with AT_SYMLINK_NOFOLLOW it is;
//   - the content of files whose value is a clock (kVaryingContent) is masked.
#include <algorithm>

#include "ab/normalize_state.hpp"
#include "base/bytes.hpp"
#include "base/glob_match.h"

namespace cudatool::ab::detail {
namespace {

// Files whose content differs between two reads a moment apart on an idle machine (found by
// reading every file under /sys/bus/pci/devices/*/ and /sys/module/*/ twice, 3 s apart: only
// these changed among the default --env paths): runtime PM counters, in milliseconds.
constexpr const char* kVaryingContent[] = {
    "/sys/bus/pci/devices/*/power/runtime_active_time",
    "/sys/bus/pci/devices/*/power/runtime_suspended_time",
};

constexpr uint64_t kAtSymlinkNofollow = 0x100;  // <fcntl.h> AT_SYMLINK_NOFOLLOW

bool varying_content(const std::string& path) {
  for (const char* g : kVaryingContent) {
    if (nvtr_glob_match(g, path.c_str()) != 0) return true;
  }
  return false;
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t b[8];
  store_le<uint64_t>(b, v);
  out.insert(out.end(), b, b + 8);
}

NormBuffer& push_buffer(Normalizer::State& s, Role role, const std::vector<uint8_t>& image,
                        uint64_t recorded) {
  NormalizedTrace& out = s.out;
  NormBuffer nb;
  nb.role = role;
  nb.after = true;
  nb.recorded = recorded;
  nb.compared = image.size();
  nb.bytes = out.bytes.size();
  nb.subst = out.substs.size();
  nb.subst_count = 0;
  out.bytes.insert(out.bytes.end(), image.begin(), image.end());
  out.masks.compared += image.size();
  out.buffers.push_back(nb);
  return out.buffers.back();
}

}  // namespace

void add_environment(Normalizer::State& s, const trace::Event& ev, NormEvent& ne) {
  auto [path_id, fresh] =
      s.env_path_ids.try_emplace(ev.path, static_cast<uint32_t>(s.out.env_paths.size()));
  if (fresh) s.out.env_paths.push_back(ev.path);
  ne.env_path = path_id->second + 1;
  // The call's members (call_layout: mode, rdev, size, flags, then the path as text, with the
  // link target of a symlink or readlink after " -> ").
  std::vector<uint8_t> call;
  put_u64(call, ev.mode);
  put_u64(call, ev.rdev);
  put_u64(call, ev.has_stat ? ev.st_size : 0);
  // An lstat is a stat with AT_SYMLINK_NOFOLLOW (the ptrace recorder sees newfstatat with it).
  uint64_t flags = ev.open_flags;
  if (ev.sys == trace::Sys::kStat && ev.op.find("lstat") != std::string::npos) {
    flags |= kAtSymlinkNofollow;
  }
  put_u64(call, flags);
  call.insert(call.end(), ev.path.begin(), ev.path.end());
  if (ev.sys == trace::Sys::kSymlink || ev.sys == trace::Sys::kReadlink) {
    static constexpr std::string_view kArrow = " -> ";
    call.insert(call.end(), kArrow.begin(), kArrow.end());
    call.insert(call.end(), ev.target.begin(), ev.target.end());
  }
  for (const trace::ExtraField& x : ev.extra) {  // chown: uid and gid
    if (x.key == "uid" || x.key == "gid") {
      call.push_back(' ');
      call.insert(call.end(), x.key.begin(), x.key.end());
      call.push_back('=');
      call.insert(call.end(), x.json.begin(), x.json.end());
    }
  }
  push_buffer(s, Role::kCall, call, call.size());
  if (ev.sys == trace::Sys::kFile && ev.err == 0 && ev.ret != -1) ne.ret = 0;

  // What the file holds: its bytes, or a directory's names (one per line).
  if (ev.content) {
    const trace::Buffer& b = *ev.content;
    if (varying_content(ev.path)) {
      NormBuffer& nb = push_buffer(s, Role::kContent, {}, b.after.size());
      nb.unreadable = b.after.empty() && !b.after_error.empty();
      s.out.masks.by_rule += b.after.size();
    } else {
      NormBuffer& nb = push_buffer(s, Role::kContent, b.after, b.after.size());
      nb.unreadable = b.after.empty() && !b.after_error.empty();
    }
  } else if (ev.has_entries) {
    std::vector<uint8_t> names;
    for (const std::string& e : ev.entries) {
      names.insert(names.end(), e.begin(), e.end());
      names.push_back('\n');
    }
    push_buffer(s, Role::kContent, names, names.size());
  }
}

}  // namespace cudatool::ab::detail
