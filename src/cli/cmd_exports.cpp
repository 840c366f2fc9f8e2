// cudatool exports LIB: every defined dynamic symbol, with the API naming parsed from its name.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <map>
#include <set>

#include "base/glob_check.hpp"
#include "base/glob_match.h"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"

namespace cudatool::cli {
namespace {

struct ExportsOptions {
  std::string lib;
  bool json = false;
  bool summary = false;
  std::string filter;
};

std::string section_name(const DriverImage& img, const elf::Symbol& s) {
  if (s.st_shndx == SHN_ABS) return "*ABS*";
  if (const auto* sh = img.elf().section_at(s.st_shndx)) return std::string(sh->name);
  return fmt::format("[{}]", s.st_shndx);
}

std::string version_label(uint32_t v) {
  return v == 0 ? "none" : fmt::format("v{}", v);
}
std::string variant_label(cuda::StreamVariant v) {
  return v == cuda::StreamVariant::kNone ? "none" : std::string(cuda::variant_name(v));
}

struct Summary {
  struct Domain {
    uint64_t exports = 0;
    std::set<std::string_view> bases;
  };
  std::map<std::string_view, Domain> by_domain;
  std::map<uint32_t, uint64_t> by_version;
  std::map<std::string, uint64_t> by_variant;
  std::set<std::string_view> bases;
  uint64_t total = 0;
};

Summary summarize(const std::vector<const Export*>& list) {
  Summary s;
  for (const Export* e : list) {
    ++s.total;
    auto& d = s.by_domain[e->api.domain];
    ++d.exports;
    d.bases.insert(e->api.base);
    s.bases.insert(e->api.base);
    ++s.by_version[e->api.version];
    ++s.by_variant[variant_label(e->api.variant)];
  }
  return s;
}

// Says on stderr that --filter matched none of the exports, and what matches ignoring case.
void say_no_match(const std::string& filter, const std::vector<Export>& all) {
  std::string like;
  size_t n = 0;
  for (const auto& e : all) {
    if (glob_match(filter, e.sym.name, /*fold_case=*/true) && n++ == 0) like = e.sym.name;
  }
  fmt::print(stderr, "cudatool: note: --filter '{}' matches none of the {} exports{}\n", filter,
             all.size(),
             n == 0 ? std::string() : fmt::format(" ({} match ignoring case, e.g. {})", n, like));
}

std::string summary_json(const DriverImage& img, const ExportsOptions& o, const Summary& s) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().kv("schema", "cudatool.exports-summary/1").kv("path", img.path());
  if (!o.filter.empty()) w.kv("filter", o.filter);
  w.kv("exports", s.total).kv("api_base_names", s.bases.size());
  w.key("by_domain").begin_array();
  for (const auto& [k, d] : s.by_domain) {
    w.begin_object()
        .kv("domain", k)
        .kv("exports", d.exports)
        .kv("base_names", d.bases.size())
        .end_object();
  }
  w.end_array();
  w.key("by_version").begin_array();
  for (const auto& [k, n] : s.by_version) {
    w.begin_object().kv("version", version_label(k)).kv("count", n).end_object();
  }
  w.end_array();
  w.key("by_variant").begin_array();
  for (const auto& [k, n] : s.by_variant)
    w.begin_object().kv("variant", k).kv("count", n).end_object();
  w.end_array();
  w.end_object();
  w.finish();
  return out;
}

std::string summary_text(const ExportsOptions& o, const Summary& s) {
  std::string out;
  out += fmt::format("{} exports, {} distinct API base names{}\n\n", s.total, s.bases.size(),
                     o.filter.empty() ? "" : fmt::format(" (filter {})", o.filter));
  std::vector<std::pair<std::string_view, const Summary::Domain*>> doms;
  for (const auto& [k, d] : s.by_domain) doms.emplace_back(k, &d);
  std::stable_sort(doms.begin(), doms.end(), [](const auto& a, const auto& b) {
    return a.second->exports > b.second->exports;
  });
  TextTable t({"domain", "exports", "base names"}, {false, true, true});
  for (const auto& [k, d] : doms) {
    t.add({std::string(k), fmt::format("{}", d->exports), fmt::format("{}", d->bases.size())});
  }
  out += t.render();
  TextTable v({"version suffix", "exports"}, {false, true});
  for (const auto& [k, n] : s.by_version) v.add({version_label(k), fmt::format("{}", n)});
  out += "\n" + v.render();
  TextTable p({"stream variant", "exports"}, {false, true});
  for (const auto& [k, n] : s.by_variant) p.add({k, fmt::format("{}", n)});
  out += "\n" + p.render();
  return out;
}

std::string list_json(const DriverImage& img, const ExportsOptions& o,
                      const std::vector<const Export*>& list) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().kv("schema", "cudatool.exports/1").kv("path", img.path());
  if (!o.filter.empty()) w.kv("filter", o.filter);
  w.kv("count", list.size());
  w.key("exports").begin_array();
  for (const Export* e : list) {
    w.begin_object();
    w.kv("name", e->sym.name).kv_hex("address", e->sym.st_value).kv("size", e->sym.st_size);
    w.kv("type", elf::symbol_type_name(e->sym.type()))
        .kv("binding", elf::symbol_binding_name(e->sym.binding()));
    w.kv("visibility", elf::symbol_visibility_name(e->sym.visibility()));
    w.kv("section", section_name(img, e->sym));
    w.kv_or_null("symbol_version", e->version);
    w.kv("base", e->api.base);
    if (e->api.version == 0)
      w.key("api_version").null();
    else
      w.kv("api_version", e->api.version);
    if (e->api.variant == cuda::StreamVariant::kNone)
      w.key("variant").null();
    else
      w.kv("variant", cuda::variant_name(e->api.variant));
    w.kv("domain", e->api.domain).kv("driver_api", e->api.is_driver_api);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.finish();
  return out;
}

std::string list_text(const std::vector<const Export*>& list) {
  std::string out;
  TextTable t({"address", "size", "type", "bind", "name", "base", "ver", "variant", "domain"},
              {true, true, false, false, false, false, false, false, false});
  for (const Export* e : list) {
    t.add({hex(e->sym.st_value), fmt::format("{}", e->sym.st_size),
           elf::symbol_type_name(e->sym.type()), elf::symbol_binding_name(e->sym.binding()),
           std::string(e->sym.name), std::string(e->api.base),
           e->api.version ? fmt::format("v{}", e->api.version) : "-",
           e->api.variant == cuda::StreamVariant::kNone
               ? "-"
               : std::string(cuda::variant_name(e->api.variant)),
           std::string(e->api.domain)});
  }
  out = t.render();
  out += fmt::format("{} exports\n", list.size());
  return out;
}

int run_exports(const ExportsOptions& o) {
  if (!o.filter.empty()) {
    if (auto why = glob_problem(o.filter)) {
      print_error(fmt::format("--filter '{}': not a glob: {}", o.filter, *why));
      return kExitBadInput;
    }
  }
  auto img = open_library(o.lib);
  if (!img) return kExitBadInput;
  std::vector<const Export*> list;
  for (const auto& e : img->exports()) {
    if (!o.filter.empty() && !glob_match(o.filter, e.sym.name)) continue;
    list.push_back(&e);
  }
  if (!o.filter.empty() && list.empty()) say_no_match(o.filter, img->exports());
  std::string out;
  if (o.summary) {
    Summary s = summarize(list);
    out = o.json ? summary_json(*img, o, s) : summary_text(o, s);
  } else {
    out = o.json ? list_json(*img, o, list) : list_text(list);
  }
  emit(out);
  return report_diagnostics(img->diagnostics());
}

}  // namespace

void register_exports(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExportsOptions>();
  auto* cmd = app.add_subcommand(
      "exports", "Exported symbols with their CUDA API naming (_vN, _ptsz/_ptds, domain)");
  cmd->add_option("LIB", o->lib, "libcuda build (default: the system's libcuda.so.1)");
  cmd->add_flag("--json", o->json,
                "print JSON (schema cudatool.exports/1 or cudatool.exports-summary/1)");
  cmd->add_flag("--summary", o->summary,
                "count exports by API domain, version suffix and stream variant");
  cmd->add_option("--filter", o->filter,
                  "only names matching this shell glob, e.g. 'cuMem*' or '*_ptsz'");
  cmd->footer(
      "Each name is split as cu<Domain>…[_vN][_ptsz|_ptds]: cuMemcpyHtoDAsync_v2_ptsz has base\n"
      "cuMemcpyHtoDAsync, API version 2, variant ptsz (per-thread default stream), domain Memcpy.\n"
      "Examples:\n"
      "  cudatool exports LIB --summary\n"
      "  cudatool exports LIB --filter 'cuCtxCreate*'\n"
      "  cudatool exports LIB --json | jq -r '.exports[] | select(.api_version==2) | .name'");
  cmd->callback([o, exit_code] { *exit_code = run_exports(*o); });
}

}  // namespace cudatool::cli
