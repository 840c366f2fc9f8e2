#include "trace/stack_resolver.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "base/errno_error.hpp"
#include "base/glob_match.h"
#include "trace/trace_file.hpp"

namespace cudatool::trace {
namespace {

// A directory of --lib-path holds at most this many files that are looked at (a mistaken
// --lib-path / must not read the whole disk).
constexpr size_t kMaxScannedFiles = 20000;

std::string_view file_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

Result<std::unique_ptr<DriverImage>> open_regular(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return errno_error(path, "", errno);
  }
  if (!S_ISREG(st.st_mode)) return make_error(path, "", std::nullopt, "not a regular file");
  return DriverImage::open(path);
}

std::string short_id(const std::string& id) {
  return id.size() > 12 ? id.substr(0, 12) + "…" : id;
}

}  // namespace

// One module file, opened once.
struct StackResolver::Resolved {
  std::string function;  // "" when no function holds the address
  uint64_t function_start = 0;
  std::string api;
};

struct StackResolver::Loaded {
  Library* info = nullptr;
  std::unique_ptr<DriverImage> img;
  FunctionMap* map = nullptr;
  std::unordered_map<uint64_t, Resolved> cache;  // by the offset looked up
};

StackResolver::StackResolver(ResolverOptions options) : opt_(std::move(options)) {
  if (!opt_.open) opt_.open = open_regular;
}

StackResolver::~StackResolver() = default;

bool StackResolver::is_api_lib(std::string_view path) const {
  return !opt_.api_lib.empty() && glob_match(opt_.api_lib, file_name(path), /*fold_case=*/true);
}

void StackResolver::follow(const std::vector<Module>& records, const Event& ev) {
  map_.sync(records);
  map_.observe(ev);
}

std::vector<const Library*> StackResolver::take_new_libraries() {
  std::vector<const Library*> out;
  for (; libs_reported_ < libs_.size(); ++libs_reported_)
    out.push_back(libs_[libs_reported_].get());
  return out;
}

std::string StackResolver::find_in_lib_paths(const std::string& build_id, const std::string& path,
                                             std::string* tried) {
  if (opt_.lib_paths.empty() || build_id.empty()) return {};
  // The recorded file name first in each directory (cheap, and usually right), then everything.
  for (const std::string& dir : opt_.lib_paths) {
    std::string candidate = dir + "/" + std::string(file_name(path));
    auto img = opt_.open(candidate);
    if (img && (*img)->build_id() && *(*img)->build_id() == build_id) return candidate;
  }
  if (!scanned_) {
    scanned_ = true;
    size_t seen = 0;
    for (const std::string& dir : opt_.lib_paths) {
      DIR* d = opendir(dir.c_str());
      if (d == nullptr) continue;
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.' || ++seen > kMaxScannedFiles) continue;
        std::string p = dir + "/" + e->d_name;
        auto img = opt_.open(p);
        if (img && (*img)->build_id()) by_build_id_.emplace(*(*img)->build_id(), p);
      }
      closedir(d);
    }
  }
  auto it = by_build_id_.find(build_id);
  if (it != by_build_id_.end()) return it->second;
  *tried = fmt::format("not in --lib-path {}", fmt::join(opt_.lib_paths, ", "));
  return {};
}

StackResolver::Loaded& StackResolver::load(const Module& m) {
  if (auto it = by_module_.find(&m); it != by_module_.end()) return *it->second;
  std::string key = m.path + '\0' + m.build_id;
  auto it = loaded_.find(key);
  if (it == loaded_.end()) {
    auto lib = std::make_unique<Library>();
    lib->path = m.path;
    lib->build_id = m.build_id;
    lib->api = is_api_lib(m.path);
    auto l = std::make_unique<Loaded>();
    l->info = lib.get();
    std::string why;
    auto img = opt_.open(m.path);
    if (!img) {
      why = fmt::format("{} cannot be read here ({})", m.path, img.error().reason);
    } else {
      const auto& id = (*img)->build_id();
      std::string have = id ? *id : std::string();
      if (!m.build_id.empty() && have != m.build_id) {
        why = fmt::format("{} here has build id {}, the trace's has {}", m.path,
                          have.empty() ? "none" : short_id(have), short_id(m.build_id));
      } else {
        l->img = std::move(*img);
        lib->file = m.path;
      }
    }
    if (!l->img) {
      std::string tried;
      std::string found = find_in_lib_paths(m.build_id, m.path, &tried);
      if (!found.empty()) {
        if (auto img2 = opt_.open(found); img2) {
          l->img = std::move(*img2);
          lib->file = found;
        }
      }
      if (!l->img) {
        if (!tried.empty()) why += "; " + tried;
        if (opt_.lib_paths.empty() && !m.build_id.empty()) {
          why += "; give --lib-path DIR with a file of that build id";
        }
        lib->why = why;
      }
    }
    if (l->img) {
      FunctionMap& map = l->img->facet<FunctionMap>();
      if (lib->api) add_driver_table_names(*l->img, map);
      add_symtab_names(*l->img, map);
      l->map = &map;
      lib->functions = map.functions().size();
    }
    libs_.push_back(std::move(lib));
    it = loaded_.emplace(std::move(key), std::move(l)).first;
  }
  by_module_[&m] = it->second.get();
  return *it->second;
}

const StackResolver::Resolved& StackResolver::resolve(Loaded& lib, uint64_t offset) {
  auto [it, added] = lib.cache.try_emplace(offset);
  Resolved& r = it->second;
  if (!added || lib.map == nullptr) return r;
  const Function* f = lib.map->find(offset);
  if (f == nullptr) return r;
  r.function = lib.map->display_name(*f);
  r.function_start = f->start;
  for (const FunctionName& n : lib.map->names(*f)) {
    if (!lib.info->api) break;
    if (n.source == kExportSource || n.source == kProcAddressSource) {
      r.api = std::string(n.name);
      break;
    }
    if (n.source == kImplSource && n.name.size() > 5 &&
        n.name.substr(n.name.size() - 5) == ".impl") {
      r.api = std::string(n.name.substr(0, n.name.size() - 5));
    }
  }
  return r;
}

void StackResolver::frames(const Event& ev, std::vector<ResolvedFrame>& out) {
  out.clear();
  for (uint64_t a : ev.stack) {
    ResolvedFrame f;
    f.addr = a;
    f.module = map_.find(ev.pid, a);
    if (f.module != nullptr) {
      Loaded& lib = load(*f.module);
      f.library = lib.info;
      f.offset = a - f.module->base;
      // A return address is after its call; the call is what belongs to the function.
      const Resolved& r = resolve(lib, f.offset == 0 ? 0 : f.offset - 1);
      if (!r.function.empty()) {
        f.function = r.function;
        f.function_offset = f.offset - r.function_start;
      }
      f.api = r.api;
    }
    out.push_back(f);
  }
}

std::optional<std::string_view> StackResolver::api_of(const Event& ev) {
  if (ev.stack.empty()) return std::nullopt;
  frames(ev, scratch_);
  for (auto it = scratch_.rbegin(); it != scratch_.rend(); ++it) {
    if (!it->api.empty()) return it->api;
  }
  return std::nullopt;
}

std::string StackResolver::module_text(const ResolvedFrame& f) {
  if (f.module == nullptr) return fmt::format("0x{:x}", f.addr);
  return fmt::format("{}+0x{:x}", file_name(f.module->path), f.offset);
}

std::string StackResolver::function_text(const ResolvedFrame& f) {
  if (f.function.empty()) return {};
  return fmt::format("{}+0x{:x}", f.function, f.function_offset);
}

std::function<std::optional<std::string>(const Event&)> make_api_namer(const TraceReader& reader,
                                                                       ResolverOptions options) {
  auto res = std::make_shared<StackResolver>(std::move(options));
  return [res, &reader](const Event& ev) -> std::optional<std::string> {
    res->follow(reader.modules(), ev);
    auto api = res->api_of(ev);
    if (!api) return std::nullopt;
    return std::string(*api);
  };
}

}  // namespace cudatool::trace
