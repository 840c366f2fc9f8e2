// cudatool history LIB...: one row per build, one column per fact, and when each API appeared.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <map>

#include <algorithm>

#include "analysis/abi_layout.hpp"
#include "analysis/abi_surface.hpp"
#include "analysis/delta.hpp"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/doc.hpp"
#include "cli/facts_json.hpp"

namespace cudatool::cli {
namespace {

struct HistoryOptions {
  std::vector<std::string> libs;
  bool json = false, markdown = false, csv = false, all = false, fast = false;
};

// Each build's kernel-ABI surface against the build before it in the series (`abi OLD NEW` in
// short): requests of high or medium confidence, and how many are new and gone.
struct AbiColumn {
  size_t requests = 0, added = 0, removed = 0;
  bool first = true;
};
using AbiColumns = std::map<const BuildFacts*, AbiColumn>;

size_t confident(const std::vector<const AbiRequest*>& v) {
  return static_cast<size_t>(std::count_if(v.begin(), v.end(), [](const AbiRequest* r) {
    return r->confidence != AbiConfidence::kLow;
  }));
}

AbiColumns abi_columns(const History& h, const std::vector<BuildFacts>& facts,
                       const std::vector<std::unique_ptr<DriverImage>>& imgs) {
  AbiColumns out;
  const AbiSurface* prev = nullptr;
  for (const BuildFacts* f : h.builds) {
    auto i = static_cast<size_t>(f - facts.data());
    const AbiSurface& s = imgs[i]->facet<AbiSurface>();
    AbiColumn& c = out[f];
    for (const AbiRequest& r : s.requests()) c.requests += r.confidence != AbiConfidence::kLow;
    if (prev != nullptr) {
      AbiDiff d = diff_abi(*prev, s);
      c.added = confident(d.added), c.removed = confident(d.removed), c.first = false;
    }
    prev = &s;
  }
  return out;
}

std::string opt_num(bool has, uint64_t v) {
  return has ? fmt::format("{}", v) : "-";
}

// The per-build table: headers and rows, shared by text, Markdown and CSV.
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> build_table(
    const History& h, const AbiColumns& abi) {
  std::vector<std::string> headers = {
      "build",         "file size",        "exports",     "imports", "functions",  "cubins",
      "export tables", "procaddress rows", "error codes", "note",    "CUDA (note)"};
  for (const auto& arch : h.archs) headers.push_back(arch);
  headers.emplace_back("kernel requests");
  std::vector<std::vector<std::string>> rows;
  for (const BuildFacts* f : h.builds) {
    std::vector<std::string> r = {
        build_label(*f),
        fmt::format("{}", f->file_size),
        fmt::format("{}", f->exports.size()),
        fmt::format("{}", f->imports.size()),
        opt_num(f->functions.has_value(), f->functions ? f->functions->count : 0),
        opt_num(f->cubins.has_value(), f->cubins ? f->cubins->images : 0),
        opt_num(f->tables.has_value(), f->tables ? f->tables->export_tables.size() : 0),
        opt_num(f->tables.has_value(), f->tables ? f->tables->procaddress.size() : 0),
        opt_num(f->tables.has_value(), f->tables ? f->tables->errors.size() : 0),
        f->note.status,
        f->note.cuda_version.value_or("-"),
    };
    for (const auto& arch : h.archs) {
      uint64_t n = 0;
      if (f->cubins) {
        auto it = f->cubins->images_per_arch.find(arch);
        if (it != f->cubins->images_per_arch.end()) n = it->second;
      }
      r.push_back(f->cubins ? fmt::format("{}", n) : "-");
    }
    auto it = abi.find(f);
    if (it == abi.end()) {
      r.emplace_back("-");
    } else {
      const AbiColumn& c = it->second;
      r.push_back(c.first ? fmt::format("{}", c.requests)
                          : fmt::format("{} (+{} / -{})", c.requests, c.added, c.removed));
    }
    rows.push_back(std::move(r));
  }
  return {headers, rows};
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string render_doc(const History& h, const AbiColumns& abi, bool md, bool all) {
  Doc doc(md);
  doc.heading(1, fmt::format("cudatool history: {} builds", h.builds.size()));
  auto [headers, rows] = build_table(h, abi);
  std::vector<bool> right(headers.size(), true);
  right[0] = false;
  right[9] = right[10] = false;
  doc.table(headers, rows, right);
  if (h.builds.empty()) return doc.str();
  // APIs by the build that first exports them (the "since" attribute), and exported data apart,
  // as delta counts them.
  std::map<std::string, std::vector<std::string>> by_since, data_by_since;
  for (const auto& [base, since] : h.api_since) by_since[since].push_back(base);
  for (const auto& [base, since] : h.data_since) data_by_since[since].push_back(base);
  doc.heading(2, "API base names by the first build that exports them");
  size_t limit = all ? SIZE_MAX : 30;
  auto names = [&](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size() && i < limit; ++i) {
      out += fmt::format("{}{}", i ? ", " : "", code(md, v[i]));
    }
    if (v.size() > limit) out += fmt::format(", … ({} more; --all)", v.size() - limit);
    return out;
  };
  for (const BuildFacts* f : h.builds) {
    std::string label = build_label(*f);
    auto it = by_since.find(label);
    auto data = data_by_since.find(label);
    size_t n = it == by_since.end() ? 0 : it->second.size();
    size_t nd = data == data_by_since.end() ? 0 : data->second.size();
    bool first = f == h.builds.front();
    // "580.159.04: 54 new APIs, and 5 new exported data (not APIs): cudbgReported…"
    std::string data_note =
        nd == 0 ? std::string()
                : fmt::format(", and {} {}exported data (not APIs){}", nd, first ? "" : "new ",
                              first ? "" : ": " + names(data->second));
    doc.bullet(fmt::format("{}: {} {}{}{}", label, n, first ? "APIs" : "new APIs", data_note,
                           first ? ", present in the first build of the series" : ""));
    if (first || n == 0) continue;
    doc.bullet(names(it->second), 1);
  }
  return doc.str();
}

int run_history(const HistoryOptions& o) {
  std::vector<std::unique_ptr<DriverImage>> imgs;
  std::vector<BuildFacts> facts;
  FactOptions fo;
  if (o.fast) fo.functions = fo.cubins = fo.tables = false;
  int status = kExitOk;
  for (size_t i = 0; i < o.libs.size(); ++i) {
    fmt::print(stderr, "cudatool: history: reading {} ({}/{})\n", o.libs[i], i + 1, o.libs.size());
    auto img = open_library(o.libs[i]);
    if (!img) return kExitBadInput;
    facts.push_back(collect_facts(*img, fo));
    status = std::max(status, report_diagnostics(img->diagnostics()));
    imgs.push_back(std::move(img));  // facts borrow nothing, but keep the order of messages
  }
  History h = compute_history(facts);
  AbiColumns abi;
  if (!o.fast) abi = abi_columns(h, facts, imgs);
  std::string out;
  if (o.json) {
    JsonWriter w(out);
    write_history_json(w, h, [&](JsonWriter& jw) {
      jw.key("abi").begin_array();
      for (const BuildFacts* f : h.builds) {
        auto it = abi.find(f);
        if (it == abi.end()) continue;
        jw.begin_object().kv("build", build_label(*f)).kv("requests", it->second.requests);
        if (it->second.first) {
          jw.key("added").null().key("removed").null();
        } else {
          jw.kv("added", it->second.added).kv("removed", it->second.removed);
        }
        jw.end_object();
      }
      jw.end_array();
    });
    w.finish();
  } else if (o.csv) {
    auto [headers, rows] = build_table(h, abi);
    for (size_t i = 0; i < headers.size(); ++i) out += (i ? "," : "") + csv_cell(headers[i]);
    out += "\n";
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + csv_cell(r[i]);
      out += "\n";
    }
  } else {
    out = render_doc(h, abi, o.markdown, o.all);
  }
  emit(out);
  return status;
}

}  // namespace

void register_history(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<HistoryOptions>();
  auto* cmd = app.add_subcommand(
      "history", "One row per driver build, one column per fact; when each API appeared");
  cmd->add_option("LIB", o->libs, "libcuda files or Debian packages (.deb), any order")->required();
  auto* j = cmd->add_flag("--json", o->json, "print JSON (schema cudatool.history/1)");
  auto* m = cmd->add_flag("--markdown", o->markdown, "print a Markdown report");
  cmd->add_flag("--csv", o->csv, "print the per-build table as CSV")->excludes(j)->excludes(m);
  cmd->add_flag("--all", o->all, "list every API in the 'since' section");
  cmd->add_flag("--fast", o->fast, "skip functions, device code and driver tables");
  cmd->footer(
      "Builds are sorted by driver version. The 'since' section gives, for each API base name, "
      "the\n"
      "first build of the series that exports it (the attribute NVIDIA's own export lists carry "
      "and\n"
      "the binary does not); --json has it per export name too. Exported data (OBJECT symbols,\n"
      "cuda-gdb's cudbgReported…) is counted apart from the APIs, as delta counts it.\n"
      "'kernel requests': the kernel-ABI requests of high or medium confidence the build's code\n"
      "makes (cudatool abi), with how many are new and gone against the build before it (not with\n"
      "--fast).\n"
      "Examples:\n"
      "  cudatool history ~/.cache/cudatool/drivers/libcuda.so.*\n"
      "  cudatool history ~/.cache/cudatool/drivers/*.deb --csv > series.csv");
  cmd->callback([o, exit_code] { *exit_code = run_history(*o); });
}

}  // namespace cudatool::cli
