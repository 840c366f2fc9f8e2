// cudatool: what a libcuda build contains, and what a CUDA program asks of the kernel driver.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"

#include <algorithm>
#include <string>
#include <string_view>

using namespace cudatool::cli;  // NOLINT: the register_ functions and the exit statuses

namespace {

// Every subcommand, in the order `cudatool` and `--help` list them: one row each. To add a
// command: its register_ function (commands.hpp), then one row here.
enum class Group : uint8_t { kStatic, kDynamic };
struct CommandEntry {
  std::string_view name;
  void (*add)(CLI::App&, int*);
  Group group;
  std::string_view summary;  // one line, for the list `cudatool` prints without arguments
  std::string_view more;     // where to read more
};
// clang-format off
constexpr CommandEntry kCommands[] = {
    {"info", register_info, Group::kStatic, "what the build is: build id, layout, driver version, fwd-compat note", "README.md"},
    {"exports", register_exports, Group::kStatic, "exported API entry points with their _vN / _ptsz / _ptds variants", "README.md"},
    {"imports", register_imports, Group::kStatic, "what it imports, from which library and version", "README.md"},
    {"cubins", register_cubins, Group::kStatic, "embedded GPU programs (cubins, fatbins), by architecture", "docs/cubins.md"},
    {"tables", register_tables, Group::kStatic, "routing tables: cuGetProcAddress, cuGetExportTable, dispatch, errors", "docs/tables.md"},
    {"functions", register_functions, Group::kStatic, "the functions of the stripped binary, from .eh_frame", "docs/functions.md"},
    {"addr", register_addr, Group::kStatic, "which function holds an address (library or runtime)", "docs/functions.md"},
    {"symbolize", register_symbolize, Group::kStatic, "a symbol file for gdb, perf and addr2line", "docs/functions.md"},
    {"xrefs", register_xrefs, Group::kStatic, "who calls what, which functions use a string, call paths", "docs/xrefs.md"},
    {"index", register_index, Group::kStatic, "the whole cross-reference index as SQLite", "docs/xrefs.md"},
    {"delta", register_delta, Group::kStatic, "what changed between two driver builds", "docs/delta.md"},
    {"history", register_history, Group::kStatic, "one row per build of a series; when each API appeared", "docs/delta.md"},
    {"abi", register_abi, Group::kStatic, "the kernel-ABI surface: requests it can make, their layouts", "docs/abi.md"},
    {"trace", register_trace, Group::kDynamic, "record a program's calls on /dev/nvidia* (and what it looked at)", "docs/tracing.md"},
    {"import", register_import, Group::kDynamic, "convert a capture of the simpler JSON-lines format to a trace", "docs/trace-format.md"},
    {"decode", register_decode, Group::kDynamic, "every event of a trace, by NVIDIA's names; filters", "docs/decode.md"},
    {"stats", register_stats, Group::kDynamic, "counts, failures, RM objects, slowest calls of a trace", "docs/decode.md"},
    {"export", register_export, Group::kDynamic, "a trace as Perfetto / Chrome trace-event JSON (timeline)", "docs/decode.md"},
    {"ab", register_ab, Group::kDynamic, "where run B first diverges from run A", "docs/ab.md"},
    {"replay", register_replay, Group::kDynamic, "run the real libcuda without a GPU, answered from a trace", "docs/replay.md"},
};
// clang-format on

constexpr std::string_view group_title(Group g) {
  return g == Group::kStatic ? "Static: a libcuda build, from the file alone"
                             : "Dynamic: what a program asks of the kernel driver (traces)";
}

// What `cudatool` without arguments prints: the commands by group, one line each.
std::string command_list() {
  size_t wname = 0, wsum = 0;
  for (const auto& c : kCommands) {
    wname = std::max(wname, c.name.size());
    wsum = std::max(wsum, c.summary.size());
  }
  std::string out =
      "cudatool: what a libcuda build contains, and what a CUDA program asks of the kernel "
      "driver.\nusage: cudatool COMMAND [ARGS...]\n";
  for (Group g : {Group::kStatic, Group::kDynamic}) {
    out += fmt::format("\n{}:\n", group_title(g));
    for (const auto& c : kCommands) {
      if (c.group != g) continue;
      out += fmt::format("  {:<{}}  {:<{}}  {}\n", c.name, wname, c.summary, wsum, c.more);
    }
  }
  out +=
      "\n`cudatool COMMAND --help` gives a command's options and examples; README.md the\n"
      "overview. Every command has --json. Exit status: 0 ok, 1 findings, 2 bad input or usage.\n";
  return out;
}

// Whether the command's options (before a "--" that starts a traced or replayed command) ask
// for JSON: errors are then one JSON object on stdout too.
bool wants_json(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--json" || a.starts_with("--json=")) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cudatool — re-derives how NVIDIA's CUDA userspace driver (libcuda.so) is built and how it "
      "talks to the kernel driver.",
      "cudatool"};
  if (argc <= 1) {
    emit(command_list());
    return kExitBadInput;
  }
  app.require_subcommand(1);
  app.set_version_flag("--version", CUDATOOL_VERSION);
  app.footer(
      "Run `cudatool COMMAND --help` for the options of one command.\n"
      "Every command prints a table for people; --json prints the same facts for scripts.\n"
      "Exit status: 0 ok, 1 findings (e.g. a divergence), 2 bad input or usage.");
  int exit_code = kExitOk;
  if (wants_json(argc, argv)) keep_json_errors(argv[1]);
  // Start-up is a large part of the fast commands' cost: when argv[1] names a command, only that
  // command's options are built; otherwise (help, typos) all of them.
  bool one = false;
  for (const auto& c : kCommands) {
    if (c.name == argv[1]) {
      c.add(app, &exit_code);
      one = true;
    }
  }
  if (!one && argv[1][0] != '-') {
    std::string names;
    for (const auto& c : kCommands) names += fmt::format("{}{}", names.empty() ? "" : ", ", c.name);
    print_error(
        fmt::format("unknown command '{}' (commands: {}; see cudatool --help)", argv[1], names));
    return json_error_exit(kExitBadInput);
  }
  if (!one) {
    for (const auto& c : kCommands) {
      c.add(app, &exit_code);
      app.get_subcommand(std::string(c.name))->group(std::string(group_title(c.group)));
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    print_error(one ? fmt::format("{}: {}", argv[1], e.what()) : std::string(e.what()));
    print_hint(one ? fmt::format("`cudatool {} --help` lists its options and examples", argv[1])
                   : std::string("`cudatool` lists the commands"));
    return json_error_exit(kExitBadInput);
  }
  return json_error_exit(exit_code);
}
