// cudatool delta OLD NEW: what changed between two driver builds, at the interface level.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "analysis/abi_layout.hpp"
#include "analysis/abi_surface.hpp"
#include "analysis/delta.hpp"
#include "base/json_writer.hpp"
#include "cli/abi_output.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/doc.hpp"
#include "cli/facts_json.hpp"

namespace cudatool::cli {
namespace {

struct DeltaOptions {
  std::string old_lib, new_lib;
  bool json = false;
  bool markdown = false;
  bool all = false;
  bool fast = false;
};

std::string signed_num(int64_t v) {
  return v > 0 ? fmt::format("+{}", v) : fmt::format("{}", v);
}

std::string join(const std::vector<std::string>& v, size_t limit, const std::string& sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size() && i < limit; ++i) s += (i ? sep : "") + v[i];
  if (v.size() > limit) s += fmt::format("{}… ({} more)", sep, v.size() - limit);
  return s;
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? " " : "", v[i]);
  return s.empty() ? "none" : s;
}

std::string note_line(const NoteFacts& n) {
  if (n.status != "present") return n.status;
  return fmt::format("CUDA {}, kernel-driver branches {}, device generations {}",
                     n.cuda_version.value_or("?"), join_ints(n.driver_branches),
                     join_ints(n.device_generations));
}

void groups(Doc& doc, bool md, const std::string& title, const std::vector<ApiGroup>& g,
            size_t limit) {
  if (g.empty()) return;
  doc.heading(3, fmt::format("{} ({})", title, g.size()));
  size_t shown = 0;
  for (const auto& x : g) {
    if (shown++ == limit) {
      doc.bullet(fmt::format("… and {} more (--all lists every one)", g.size() - limit));
      break;
    }
    if (x.names.size() == 1 && x.names[0] == x.base) {
      doc.bullet(code(md, x.base));
      continue;
    }
    std::vector<std::string> names;
    for (const auto& n : x.names) names.push_back(code(md, n));
    doc.bullet(fmt::format("{}: {}", code(md, x.base), join(names, 12)));
  }
}

void list(Doc& doc, bool md, const std::string& title, const std::vector<std::string>& v,
          size_t limit) {
  if (v.empty()) return;
  doc.heading(3, fmt::format("{} ({})", title, v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (i == limit) {
      doc.bullet(fmt::format("… and {} more (--all lists every one)", v.size() - limit));
      break;
    }
    doc.bullet(code(md, v[i]));
  }
}

void changes(Doc& doc, bool md, const std::string& title, const std::vector<RowChange>& v,
             size_t limit) {
  if (v.empty()) return;
  doc.heading(3, fmt::format("{} ({})", title, v.size()));
  for (size_t i = 0; i < v.size() && i < limit; ++i) {
    doc.bullet(fmt::format("{}: {} → {}", code(md, v[i].key), v[i].old_value, v[i].new_value));
  }
  if (v.size() > limit) doc.bullet(fmt::format("… and {} more", v.size() - limit));
}

// The kernel-ABI section (`abi OLD NEW` in short): what the builds' code asks of the kernel.
struct AbiFold {
  const AbiSurface* old_s = nullptr;
  const AbiSurface* new_s = nullptr;
  AbiDiff diff;
};

void abi_section(Doc& doc, bool md, const AbiFold& f, size_t limit) {
  doc.heading(3, "Kernel ABI (cudatool abi OLD NEW)");
  auto names = [&](const std::vector<const AbiRequest*>& v) {
    std::vector<std::string> out;
    for (const AbiRequest* r : v) {
      if (r->confidence == AbiConfidence::kLow) continue;
      out.push_back(
          fmt::format("{} {}", abi_kind_name(r->kind),
                      r->name.empty() ? fmt::format("{:#x}?", r->value) : std::string(r->name)));
    }
    return out;
  };
  list(doc, md, "Requests new in the newer build's code (high and medium confidence)",
       names(f.diff.added), limit);
  list(doc, md, "Requests gone from it (high and medium confidence)", names(f.diff.removed), limit);
  std::vector<std::string> changed;
  for (const AbiLayoutChange& c : f.diff.changed) {
    changed.push_back(fmt::format("{} {}: {} {} → {} {}", abi_kind_name(c.kind),
                                  c.name.empty() ? "?" : c.name, c.old_params, c.old_size,
                                  c.new_params, c.new_size));
  }
  list(doc, md, "Layout changes of requests both use", changed, limit);
}

// What changed in the embedded device images.
void cubins_section(Doc& doc, bool md, const CubinDelta& c, const std::string& a,
                    const std::string& b, size_t limit) {
  list(doc, md, "Device architectures added", c.archs_added, limit);
  list(doc, md, "Device architectures removed", c.archs_removed, limit);
  if (!c.images_per_arch.empty()) {
    doc.heading(3, "Embedded images per architecture");
    std::vector<std::vector<std::string>> r;
    for (const auto& [arch, p] : c.images_per_arch) {
      r.push_back({arch, fmt::format("{}", p.first), fmt::format("{}", p.second),
                   signed_num(static_cast<int64_t>(p.second) - static_cast<int64_t>(p.first))});
    }
    doc.table({"arch", a, b, "change"}, r, {false, true, true, true});
  }
  list(doc, md, "Kernel families added", c.families_added, limit);
  list(doc, md, "Kernel families removed", c.families_removed, limit);
  for (const auto& [fam, ks] : c.kernels_added) list(doc, md, "Kernels added in " + fam, ks, limit);
  for (const auto& [fam, ks] : c.kernels_removed)
    list(doc, md, "Kernels removed from " + fam, ks, limit);
}

// What changed in the driver's tables.
void tables_section(Doc& doc, bool md, const TableDelta& t, size_t limit) {
  list(doc, md, "cuGetProcAddress rows added", t.procaddress_added, limit);
  list(doc, md, "cuGetProcAddress rows removed", t.procaddress_removed, limit);
  changes(doc, md, "cuGetProcAddress rows changed", t.procaddress_changed, limit);
  list(doc, md, "Export tables added", t.export_tables_added, limit);
  list(doc, md, "Export tables removed", t.export_tables_removed, limit);
  changes(doc, md, "Export tables changed", t.export_tables_changed, limit);
  list(doc, md, "Error codes added", t.errors_added, limit);
  list(doc, md, "Error codes removed", t.errors_removed, limit);
  changes(doc, md, "Error codes changed", t.errors_changed, limit);
}

// The summary: one line per part of the interface, and the sizes.
void summary_section(Doc& doc, const Delta& d, const AbiFold* abi, const std::string& a,
                     const std::string& b) {
  doc.heading(2, "Summary");
  auto count = [](const std::vector<ApiGroup>& g) {
    size_t n = 0;
    for (const auto& x : g) n += x.names.size();
    return n;
  };
  uint64_t ne_old = 0, ne_new = 0, ni_old = 0, ni_new = 0;
  for (const auto& s : d.sizes) {
    if (s.what == "exports") ne_old = s.old_value, ne_new = s.new_value;
    if (s.what == "imports") ni_old = s.old_value, ni_new = s.new_value;
  }
  doc.bullet(fmt::format("interface: {}", d.interface_unchanged() ? "unchanged" : "changed"));
  doc.bullet(fmt::format("fwd-compat note: {} → {}", note_line(d.old_note), note_line(d.new_note)));
  doc.bullet(fmt::format(
      "exports: {} → {} (+{} / -{}): {} new APIs ({} names), {} removed APIs, "
      "{} new _vN names, {} new _ptsz/_ptds names{}",
      ne_old, ne_new, d.exports_added.size(), d.exports_removed.size(), d.apis_added.size(),
      count(d.apis_added), d.apis_removed.size(), count(d.new_api_versions), count(d.new_variants),
      d.objects_added.empty() && d.objects_removed.empty()
          ? std::string()
          : fmt::format(", exported data +{} / -{}", d.objects_added.size(),
                        d.objects_removed.size())));
  doc.bullet(fmt::format("imports: {} → {} (+{} / -{}){}", ni_old, ni_new, d.imports_added.size(),
                         d.imports_removed.size(),
                         d.versions_required_added.empty()
                             ? std::string()
                             : "; newly required: " + join(d.versions_required_added, 20)));
  if (d.functions) {
    const auto& f = *d.functions;
    doc.bullet(fmt::format("functions: {} → {}: {} unchanged, {} changed (named), {} new, {} gone",
                           f.old_count, f.new_count, f.unchanged, f.changed, f.added, f.removed));
  }
  if (d.cubins) {
    size_t k_added = 0, k_removed = 0;
    for (const auto& [fam, ks] : d.cubins->kernels_added) k_added += ks.size();
    for (const auto& [fam, ks] : d.cubins->kernels_removed) k_removed += ks.size();
    doc.bullet(fmt::format(
        "device code: architectures +{} / -{}, image counts changed for {} architectures, kernel "
        "families +{} / -{}, kernels +{} / -{} in existing families",
        d.cubins->archs_added.size(), d.cubins->archs_removed.size(),
        d.cubins->images_per_arch.size(), d.cubins->families_added.size(),
        d.cubins->families_removed.size(), k_added, k_removed));
  }
  if (d.tables) {
    const auto& t = *d.tables;
    doc.bullet(
        fmt::format("cuGetProcAddress rows +{} / -{} / ~{}; export tables +{} / -{} / ~{}; "
                    "error codes +{} / -{} / ~{}",
                    t.procaddress_added.size(), t.procaddress_removed.size(),
                    t.procaddress_changed.size(), t.export_tables_added.size(),
                    t.export_tables_removed.size(), t.export_tables_changed.size(),
                    t.errors_added.size(), t.errors_removed.size(), t.errors_changed.size()));
  }
  if (abi != nullptr) doc.bullet("kernel ABI: " + abi_diff_summary(abi->diff));
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : d.sizes) {
    rows.push_back({s.what, fmt::format("{}", s.old_value), fmt::format("{}", s.new_value),
                    signed_num(s.diff())});
  }
  doc.table({"size", a, b, "change"}, rows, {false, true, true, true});
}

std::string render_doc(const Delta& d, bool md, bool all, const AbiFold* abi) {
  size_t limit = all ? SIZE_MAX : 40;
  Doc doc(md);
  std::string a = d.old_version.value_or(d.old_path), b = d.new_version.value_or(d.new_path);
  doc.heading(1, fmt::format("cudatool delta: {} → {}", a, b));
  if (d.same_build) doc.para("Both files are the same build (identical GNU build id).");
  summary_section(doc, d, abi, a, b);

  doc.heading(2, "Details");
  if (d.note_changed) {
    doc.heading(3, "fwd-compat note");
    doc.bullet(fmt::format("status: {} → {}", d.old_note.status, d.new_note.status));
    auto fmt_format = [](const NoteFacts& n) {
      return n.format ? fmt::format("{}", *n.format) : std::string("-");
    };
    if (d.old_note.format != d.new_note.format)
      doc.bullet(fmt::format("format: {} → {}", fmt_format(d.old_note), fmt_format(d.new_note)));
    doc.bullet(fmt::format("CUDA version: {} → {}", d.old_note.cuda_version.value_or("-"),
                           d.new_note.cuda_version.value_or("-")));
    if (!d.branches_added.empty())
      doc.bullet("kernel-driver branches added: " + join_ints(d.branches_added));
    if (!d.branches_removed.empty())
      doc.bullet("kernel-driver branches removed: " + join_ints(d.branches_removed));
    if (!d.devices_added.empty())
      doc.bullet("device generations added: " + join_ints(d.devices_added));
    if (!d.devices_removed.empty())
      doc.bullet("device generations removed: " + join_ints(d.devices_removed));
  }
  groups(doc, md, "New APIs", d.apis_added, limit);
  groups(doc, md, "New _vN versions of existing APIs", d.new_api_versions, limit);
  groups(doc, md, "New per-thread-stream variants of existing APIs", d.new_variants, limit);
  groups(doc, md, "Removed APIs", d.apis_removed, limit);
  groups(doc, md, "Removed _vN versions", d.removed_api_versions, limit);
  groups(doc, md, "Removed per-thread-stream variants", d.removed_variants, limit);
  list(doc, md, "New exported data (objects, not API calls)", d.objects_added, limit);
  list(doc, md, "Removed exported data", d.objects_removed, limit);
  std::vector<std::string> ia, ir;
  for (const auto& i : d.imports_added)
    ia.push_back(i.version.empty() ? i.name : i.name + "@" + i.version);
  for (const auto& i : d.imports_removed)
    ir.push_back(i.version.empty() ? i.name : i.name + "@" + i.version);
  list(doc, md, "Imports added", ia, limit);
  list(doc, md, "Imports removed", ir, limit);
  if (d.functions && !d.functions->largest_movers.empty()) {
    doc.heading(3, "Largest movers among changed named functions");
    std::vector<std::vector<std::string>> r;
    for (size_t i = 0; i < d.functions->largest_movers.size() && i < (all ? SIZE_MAX : 15); ++i) {
      const auto& m = d.functions->largest_movers[i];
      r.push_back(
          {m.name, fmt::format("{}", m.old_size), fmt::format("{}", m.new_size),
           signed_num(static_cast<int64_t>(m.new_size) - static_cast<int64_t>(m.old_size))});
    }
    doc.table({"function", a, b, "change"}, r, {false, true, true, true});
  }
  if (d.cubins) cubins_section(doc, md, *d.cubins, a, b, limit);
  if (d.tables) tables_section(doc, md, *d.tables, limit);
  if (abi != nullptr) abi_section(doc, md, *abi, limit);
  return doc.str();
}

int run_delta(const DeltaOptions& o) {
  auto old_img = open_library(o.old_lib);
  if (!old_img) return kExitBadInput;
  auto new_img = open_library(o.new_lib);
  if (!new_img) return kExitBadInput;
  FactOptions fo;
  if (o.fast) fo.functions = fo.cubins = fo.tables = false;
  BuildFacts a = collect_facts(*old_img, fo);
  BuildFacts b = collect_facts(*new_img, fo);
  Delta d = compute_delta(a, b);
  std::optional<AbiFold> abi;
  if (!o.fast) {
    abi.emplace();
    abi->old_s = &old_img->facet<AbiSurface>();
    abi->new_s = &new_img->facet<AbiSurface>();
    abi->diff = diff_abi(*abi->old_s, *abi->new_s);
  }
  if (o.json) {
    std::string out;
    JsonWriter w(out);
    write_delta_json(w, d, [&](JsonWriter& jw) {
      if (!abi) {
        jw.key("abi").null();
        return;
      }
      jw.key("abi");
      write_abi_diff_json(jw, abi->diff, *abi->old_s, *abi->new_s);
    });
    w.finish();
    emit(out);
  } else {
    emit(render_doc(d, o.markdown, o.all, abi ? &*abi : nullptr));
  }
  int diag = std::max(report_diagnostics(old_img->diagnostics()),
                      report_diagnostics(new_img->diagnostics()));
  if (diag != kExitOk) return diag;
  return d.interface_unchanged() ? kExitOk : kExitFindings;
}

}  // namespace

void register_delta(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<DeltaOptions>();
  auto* cmd =
      app.add_subcommand("delta", "What changed between two driver builds (interface level)");
  cmd->add_option("OLD", o->old_lib, "older build: a libcuda file or a Debian package (.deb)")
      ->required();
  cmd->add_option("NEW", o->new_lib, "newer build: a libcuda file or a Debian package (.deb)")
      ->required();
  auto* j = cmd->add_flag("--json", o->json, "print JSON (schema cudatool.delta/1)");
  cmd->add_flag("--markdown", o->markdown, "print a Markdown report (summary first, then details)")
      ->excludes(j);
  cmd->add_flag("--all", o->all,
                "list every changed name (text and Markdown cut long lists at 40)");
  cmd->add_flag("--fast", o->fast,
                "compare exports, imports, note and sizes only (skip functions, "
                "device code and driver tables)");
  cmd->footer(
      "Compares facts, never bytes: exports grouped by API base name (new APIs, new _vN versions,\n"
      "new _ptsz/_ptds variants), imports (new glibc requirements), the fwd-compat note, section\n"
      "sizes, functions matched by an address-masked fingerprint of their code, embedded device\n"
      "code per architecture, cuGetProcAddress rows, export tables and error codes, and the\n"
      "kernel-ABI requests the code makes (cudatool abi OLD NEW, in short; not with --fast).\n"
      "Exit status: 0 when the interface is unchanged, 1 when it changed, 2 on bad input.\n"
      "Examples:\n"
      "  cudatool delta libcuda.so.550.163.01 libcuda.so.555.58.02\n"
      "  cudatool delta libcuda1_550.163.01-2_amd64.deb libcuda1_555.58.02-4_amd64.deb --markdown "
      "> CHANGES.md\n"
      "  cudatool delta OLD NEW --json | jq '.exports.apis_added[].base'");
  cmd->callback([o, exit_code] { *exit_code = run_delta(*o); });
}

}  // namespace cudatool::cli
