// cudatool imports LIB: undefined dynamic symbols with the version and library they require.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <map>

#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"

namespace cudatool::cli {
namespace {

struct ImportsOptions {
  std::string lib;
  bool json = false;
};

int run_imports(const ImportsOptions& o) {
  auto img = open_library(o.lib);
  if (!img) return kExitBadInput;
  const auto& imports = img->imports();
  std::map<std::string_view, uint64_t> by_version, by_library;
  for (const auto& i : imports) {
    ++by_version[i.version];
    ++by_library[i.library];
  }
  std::string out;
  if (o.json) {
    JsonWriter w(out);
    w.begin_object()
        .kv("schema", "cudatool.imports/1")
        .kv("path", img->path())
        .kv("count", imports.size());
    w.key("imports").begin_array();
    for (const auto& i : imports) {
      w.begin_object().kv("name", i.sym.name).kv("type", elf::symbol_type_name(i.sym.type()));
      w.kv("binding", elf::symbol_binding_name(i.sym.binding()));
      w.kv_or_null("version", i.version);
      w.kv_or_null("library", i.library);
      w.end_object();
    }
    w.end_array();
    w.key("by_version").begin_array();
    for (const auto& [k, n] : by_version) {
      w.begin_object();
      w.kv_or_null("version", k);
      w.kv("count", n).end_object();
    }
    w.end_array();
    w.key("by_library").begin_array();
    for (const auto& [k, n] : by_library) {
      w.begin_object();
      w.kv_or_null("library", k);
      w.kv("count", n).end_object();
    }
    w.end_array();
    w.end_object();
    w.finish();
  } else {
    TextTable t({"name", "type", "bind", "version", "library"});
    for (const auto& i : imports) {
      t.add({std::string(i.sym.name), elf::symbol_type_name(i.sym.type()),
             elf::symbol_binding_name(i.sym.binding()),
             i.version.empty() ? "-" : std::string(i.version),
             i.library.empty() ? "-" : std::string(i.library)});
    }
    out = t.render();
    out += fmt::format("{} imports\n", imports.size());
    for (const auto& [k, n] : by_library)
      out += fmt::format("{:>6}  from {}\n", n, k.empty() ? "(unknown)" : k);
    for (const auto& [k, n] : by_version)
      out += fmt::format("{:>6}  need {}\n", n, k.empty() ? "(unversioned)" : k);
  }
  emit(out);
  return report_diagnostics(img->diagnostics());
}

}  // namespace

void register_imports(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ImportsOptions>();
  auto* cmd =
      app.add_subcommand("imports", "Undefined symbols with their required version and library");
  cmd->add_option("LIB", o->lib, "libcuda build (default: the system's libcuda.so.1)");
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.imports/1)");
  cmd->footer(
      "The library of a versioned import comes from .gnu.version_r (the file that defines the\n"
      "version); unversioned imports show '-'.\n"
      "Example: cudatool imports LIB --json | jq '.by_version'");
  cmd->callback([o, exit_code] { *exit_code = run_imports(*o); });
}

}  // namespace cudatool::cli
