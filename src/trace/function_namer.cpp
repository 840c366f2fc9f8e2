#include "trace/function_namer.hpp"

#include <fmt/format.h>

#include <utility>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"

namespace cudatool::trace {

struct FunctionNamer::Library {
  std::unique_ptr<DriverImage> img;  // null: named by address
  FunctionMap* map = nullptr;
};

FunctionNamer::FunctionNamer(std::string lib) : lib_(std::move(lib)) {}
FunctionNamer::FunctionNamer(FunctionNamer&&) noexcept = default;
FunctionNamer::~FunctionNamer() = default;

FunctionNamer::Library* FunctionNamer::library_for(const FunctionTable& t) {
  auto& slot = by_build_id_[t.build_id];
  if (slot) return slot.get();
  slot = std::make_unique<Library>();
  std::string why;
  for (const std::string& path : {lib_, t.path}) {
    if (path.empty()) continue;
    auto img = DriverImage::open(path);
    if (!img) {
      why = img.error().message();
      continue;
    }
    if ((*img)->build_id().value_or("") != t.build_id) {
      why = fmt::format("{}: build id {}, the trace's table {}", path,
                        (*img)->build_id().value_or("none"), t.build_id);
      continue;
    }
    FunctionMap& map = function_map_with_names(**img);
    slot->map = &map;
    slot->img = std::move(*img);
    return slot.get();
  }
  notes_.push_back(fmt::format("functions of build {} named by address ({})", t.build_id,
                               why.empty() ? "no library" : why));
  return slot.get();
}

std::string FunctionNamer::name(const FunctionTable* t, uint32_t number) {
  if (t == nullptr || number >= t->starts.size()) return fmt::format("function#{}", number);
  const uint64_t start = t->starts[number];
  Library* lib = library_for(*t);
  if (lib->map != nullptr) {
    if (const Function* f = lib->map->at(start)) return lib->map->display_name(*f);
  }
  return FunctionMap::derived_name(start);
}

}  // namespace cudatool::trace
