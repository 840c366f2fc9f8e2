#include "trace/capture_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "analysis/version_strings.h"
#include "rm/nv_ioctl_abi.h"
#include "rm/tables.hpp"
#include "trace/capture_import.hpp"
#include "trace/line_source.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::trace {
namespace {

// What the first bytes of a file that is not JSON lines look like, for the error.
std::string describe_start(std::string_view head) {
  if (head.starts_with("\x7f"
                       "ELF")) {
    return "it is an ELF file (a library is read by info, exports and the other static commands)";
  }
  if (head.starts_with("!<arch>\n")) return "it is an ar archive (a Debian package?)";
  if (head.starts_with("[")) return "it is a JSON array, not JSON lines";
  std::string shown;
  for (char c : head.substr(0, 16)) {
    auto u = static_cast<unsigned char>(c);
    shown += u >= 0x20 && u < 0x7f && c != '"' && c != '\\' ? std::string(1, c)
                                                            : fmt::format("\\x{:02x}", u);
  }
  return fmt::format("it starts with \"{}\"", shown);
}

// NUL-terminated text at [off, off + max) of `b` when it is a whole version ("580.159.04").
std::optional<std::string> version_at(const std::vector<uint8_t>& b, size_t off, size_t max) {
  if (off >= b.size()) return std::nullopt;
  const char* p = reinterpret_cast<const char*>(b.data() + off);
  size_t room = std::min(max, b.size() - off);
  size_t len = strnlen(p, room);
  if (len == 0 || len == room || nvtr_version_length(p, len) != len) return std::nullopt;
  return std::string(p, len);
}

const std::vector<uint8_t>& after_else_before(const Buffer& b) {
  return b.after.empty() ? b.before : b.after;
}

std::optional<NamedVersion> from_check_version(const Event& ev) {
  const rm::Tables& t = rm::all_branches().back();  // the structure is alike in every branch
  const rm::StructEntry* s = t.find_struct("nv_ioctl_rm_api_version_t");
  const rm::FieldEntry* f = s ? t.find_field(*s, "versionString") : nullptr;
  if (f == nullptr || !ev.arg) return std::nullopt;
  if (auto v = version_at(ev.arg->after, f->offset, f->size)) {
    return NamedVersion{*v, "NV_ESC_CHECK_VERSION_STR versionString"};
  }
  if (auto v = version_at(ev.arg->before, f->offset, f->size)) {
    return NamedVersion{*v,
                        "NV_ESC_CHECK_VERSION_STR versionString (the client's, before the call)"};
  }
  return std::nullopt;
}

std::optional<NamedVersion> from_build_version_v2(const Event& ev) {
  if (!ev.arg || ev.arg->before.size() < NVTR_NVOS54_SIZE) return std::nullopt;
  uint32_t cmd = 0;
  std::memcpy(&cmd, ev.arg->before.data() + 8, 4);  // NVOS54_PARAMETERS.cmd (nvos.h)
  auto params = std::find_if(ev.nested.begin(), ev.nested.end(),
                             [](const Buffer& b) { return b.role == "params"; });
  if (params == ev.nested.end()) return std::nullopt;
  const std::vector<uint8_t>& p = after_else_before(*params);
  // The layout changed between branches (titleBuffer moved in 580): take a branch whose
  // parameter size is the buffer's.
  for (const rm::Tables& t : rm::all_branches()) {
    const rm::StructEntry* s = t.find_struct("NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS");
    const rm::CtrlEntry* c = t.find_control(cmd);
    if (s == nullptr || c == nullptr || c->name != "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2" ||
        static_cast<size_t>(s->size) != p.size()) {
      continue;
    }
    const rm::FieldEntry* f = t.find_field(*s, "driverVersionBuffer");
    if (auto v = f ? version_at(p, f->offset, f->size) : std::nullopt) {
      return NamedVersion{*v, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 driverVersionBuffer"};
    }
  }
  return std::nullopt;
}

}  // namespace

Status check_capture_start(const std::string& path) {
  auto src = LineSource::open(path);
  if (!src) return src.error();
  std::string_view line;
  uint64_t off = 0, line_no = 0;
  bool complete = true;
  while ((*src)->next(line, off, complete)) {
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    std::string where = fmt::format("{} line {}", path, line_no);
    if (classify_line(line) == LineKind::kHeader) {
      return make_error(where, "", 0,
                        "already a cudatool trace (a trace header): decode, stats, ab and replay "
                        "read it as it is; import converts captures of the simpler format");
    }
    if (line[first] != '{') {
      return make_error(where, "", off,
                        fmt::format("not a capture: {}; a capture is JSON lines, "
                                    "one object per call (tests/data/captures/README.md)",
                                    describe_start(line.substr(first))));
    }
    return Status::success();
  }
  if (const auto& e = (*src)->stream_error()) return *e;
  return make_error(
      path, "", std::nullopt,
      fmt::format("empty: no capture records{}",
                  (*src)->compression() == "none"
                      ? std::string()
                      : fmt::format(" (after {} decompression)", (*src)->compression())));
}

std::optional<NamedVersion> version_named_by(const Event& ev) {
  if (ev.sys != Sys::kIoctl || NVTR_IOC_TYPE(ev.request) != NVTR_NV_IOCTL_MAGIC) {
    return std::nullopt;
  }
  // NV_ESC_CHECK_VERSION_STR's number, from the escape table (nv-ioctl-numbers.h: BASE + 10).
  static const uint32_t check_version_nr = [] {
    for (const rm::EscapeEntry& e : rm::all_branches().back().escapes()) {
      if (e.name == "NV_ESC_CHECK_VERSION_STR") return e.nr;
    }
    return 0u;
  }();
  if (NVTR_IOC_NR(ev.request) == check_version_nr) return from_check_version(ev);
  if (NVTR_IOC_NR(ev.request) == NVTR_ESC_RM_CONTROL) return from_build_version_v2(ev);
  return std::nullopt;
}

std::optional<NamedVersion> capture_driver_version(const std::string& path) {
  auto src = LineSource::open(path);
  if (!src) return std::nullopt;
  std::string_view line;
  uint64_t off = 0, line_no = 0;
  bool complete = true;
  Event ev;
  while ((*src)->next(line, off, complete)) {
    ++line_no;
    if (line.empty() || !parse_capture_line(line, off, ev).ok()) continue;
    if (auto v = version_named_by(ev)) {
      v->source += fmt::format(", line {}", line_no);
      return v;
    }
  }
  return std::nullopt;
}

}  // namespace cudatool::trace
