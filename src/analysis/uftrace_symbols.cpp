#include "analysis/uftrace_symbols.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"

namespace cudatool {
namespace {

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// uftrace reads the name as the rest of the line, cut at the first tab (a kernel module column):
// a name from the file must not carry a line break or a tab.
std::string clean_name(std::string_view name, bool* cleaned) {
  std::string out(name);
  for (char& c : out) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      c = '?';
      *cleaned = true;
    }
  }
  return out;
}

bool is_export(const FunctionMap& map, const Function& f) {
  auto names = map.names(f);
  return !names.empty() && names.front().source == kExportSource;
}

}  // namespace

UftraceSymbols build_uftrace_symbols(DriverImage& img, const FunctionMap& map,
                                     std::string_view path_name) {
  UftraceSymbols out;
  std::string body;
  const auto fns = map.functions();
  body.reserve(fns.size() * 40);
  uint64_t last_start = 0, end = 0;
  bool any = false;
  for (size_t i = 0; i < fns.size(); ++i) {
    const Function& f = fns[i];
    if (is_plt_section_name(map.exec_section(f.start))) {
      ++out.plt_skipped;
      continue;
    }
    if (any && f.start == last_start) {
      ++out.duplicates;
      continue;
    }
    // The previous function ended before this one starts: say where, or uftrace would stretch it.
    if (any && end < f.start) {
      body += fmt::format("{:016x} ? __func_end\n", end);
      ++out.end_markers;
    }
    bool cleaned = false;
    const bool exported = is_export(map, f);
    body += fmt::format("{:016x} {} {}\n", f.start, exported ? 'T' : 't',
                        clean_name(map.display_name(f), &cleaned));
    out.names_cleaned += cleaned ? 1 : 0;
    out.exported += exported ? 1 : 0;
    ++out.symbols;
    last_start = f.start;
    end = any ? std::max(end, f.end()) : f.end();
    any = true;
  }
  if (any) body += fmt::format("{:016x} ? __sym_end\n", end);

  out.text = fmt::format("# symbols: {}\n# path name: {}\n", out.symbols, path_name);
  if (const auto& id = img.build_id(); id && !id->empty())
    out.text += fmt::format("# build-id: {}\n", *id);
  out.text += body;
  return out;
}

std::vector<std::string> uftrace_symbol_file_names(DriverImage& img) {
  std::vector<std::string> names;
  auto add = [&](std::string_view n) {
    if (n.empty() || n == "." || n == "..") return;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.emplace_back(n);
  };
  // A package's own name is no name a program maps.
  if (!img.path().ends_with(".deb")) add(base_name(img.path()));
  add(base_name(img.resolved_path()));
  std::string_view soname = img.dynamic().soname;
  if (soname.find('/') == std::string_view::npos) {
    add(soname);
    // The link name a program may open: "libcuda.so" from "libcuda.so.1".
    if (size_t so = soname.find(".so."); so != std::string_view::npos)
      add(soname.substr(0, so + 3));
  }
  std::vector<std::string> files;
  const auto& id = img.build_id();
  for (const auto& n : names) {
    files.push_back(n + ".sym");
    if (id && id->size() >= 4) files.push_back(fmt::format("{}-{}.sym", n, id->substr(0, 4)));
  }
  return files;
}

}  // namespace cudatool
