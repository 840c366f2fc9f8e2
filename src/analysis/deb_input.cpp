#include "analysis/deb_input.hpp"

#include <fmt/format.h>

#include "base/archive.hpp"
#include "base/decompress.hpp"

namespace cudatool {
namespace {

bool versioned_after(std::string_view name, std::string_view stem) {
  auto slash = name.rfind('/');
  std::string_view base = slash == std::string_view::npos ? name : name.substr(slash + 1);
  if (base.substr(0, stem.size()) != stem || base.size() == stem.size()) return false;
  for (char c : base.substr(stem.size())) {
    if (!((c >= '0' && c <= '9') || c == '.')) return false;
  }
  return true;
}

}  // namespace

Result<DebLibrary> extract_library_from_deb(ByteView deb, std::string_view deb_path,
                                            std::string_view stem) {
  auto members = read_ar(deb);
  if (!members) {
    Error e = std::move(members).take_error();
    e.structure = fmt::format("{}: {}", deb_path, e.structure);
    return e;
  }
  const ArMember* data = nullptr;
  for (const auto& m : *members) {
    if (m.name.rfind("data.tar", 0) == 0) data = &m;
  }
  if (data == nullptr) {
    return make_error(std::string(deb_path), "", std::nullopt,
                      "Debian package without a data.tar member");
  }
  std::string what = fmt::format("{}: {}", deb_path, data->name);
  Compression c = detect_compression(data->data);
  auto tar = decompress(data->data, c, kMaxDebDataTar, what);
  if (!tar) return tar.error();
  auto entries = read_tar(ByteView(tar->data(), tar->size()));
  if (!entries) {
    Error e = std::move(entries).take_error();
    e.structure = fmt::format("{}: {}", what, e.structure);
    return e;
  }
  const TarEntry* best = nullptr;
  std::string seen;
  for (const auto& e : *entries) {
    if (e.name.find(".so") != std::string::npos && seen.size() < 400) {
      seen += fmt::format("{}{}", seen.empty() ? "" : ", ", e.name);
    }
    if (e.type != '0' || !versioned_after(e.name, stem)) continue;
    if (best == nullptr || e.name.size() > best->name.size()) best = &e;
  }
  if (best == nullptr) {
    return make_error(std::string(deb_path), "", std::nullopt,
                      fmt::format("holds no regular file named {}<version> (shared objects: {})",
                                  stem, seen.empty() ? "none" : seen));
  }
  DebLibrary lib;
  lib.member = best->name;
  lib.bytes.assign(best->data.data(), best->data.data() + best->data.size());
  return lib;
}

}  // namespace cudatool
