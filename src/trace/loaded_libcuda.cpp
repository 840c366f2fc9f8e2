#include "trace/loaded_libcuda.hpp"

#include <climits>
#include <cstdlib>

#include "analysis/driver_image.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::trace {
namespace {

// The most events read while looking: a recording's first ioctl comes within a few dozen.
constexpr int kMaxEvents = 4096;

bool names_libcuda(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string_view name = std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  return name.rfind("libcuda.so", 0) == 0;
}

std::optional<std::string> version_of(const std::string& path) {
  if (auto v = version_from_file_name(path)) return v;
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) != nullptr) return version_from_file_name(real);
  return std::nullopt;
}

bool unversioned(const Header& h) {
  return names_no_driver_version(h) && h.stacks;
}

}  // namespace

bool names_no_driver_version(const Header& h) {
  return !h.driver_version && h.driver_version_line.empty();
}

std::optional<LoadedLibcuda> libcuda_among(std::span<const Module> modules) {
  for (const Module& m : modules) {
    if (!names_libcuda(m.path)) continue;
    if (std::optional<std::string> v = version_of(m.path)) return LoadedLibcuda{m.path, *v};
  }
  return std::nullopt;
}

std::optional<LoadedLibcuda> loaded_libcuda(TraceReader& reader) {
  Event ev;
  size_t seen = 0;
  for (int n = 0; n < kMaxEvents; ++n) {
    bool more = reader.next(ev);
    const std::vector<Module>& mods = reader.modules();
    if (mods.size() > seen) {
      std::span<const Module> fresh = std::span(mods).subspan(seen);
      seen = mods.size();
      if (std::optional<LoadedLibcuda> lib = libcuda_among(fresh)) return lib;
    }
    if (!more || ev.sys == Sys::kIoctl) break;
  }
  return std::nullopt;
}

std::optional<LoadedLibcuda> loaded_libcuda_if_unversioned(const std::string& trace_path) {
  auto r = TraceReader::open(trace_path);
  if (!r || !unversioned((*r)->header())) return std::nullopt;
  return loaded_libcuda(**r);
}

std::optional<LoadedLibcuda> loaded_libcuda_if_unversioned(const std::string& bytes,
                                                           const std::string& name) {
  // The header line first, so that a versioned trace is not copied for a second reader.
  Header h;
  std::string_view first = std::string_view(bytes).substr(0, bytes.find('\n'));
  if (!parse_header_line(first, 0, h).ok() || !unversioned(h)) return std::nullopt;
  auto r = TraceReader::from_memory(bytes, name);
  if (!r) return std::nullopt;
  return loaded_libcuda(**r);
}

}  // namespace cudatool::trace
