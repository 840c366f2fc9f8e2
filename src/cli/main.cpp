// cudatool: what a libcuda build contains, and what a CUDA program asks of the kernel driver.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"

#include <string_view>

namespace {

// Every subcommand, in the order `--help` lists them. One line per command.
struct CommandEntry {
  std::string_view name;
  void (*add)(CLI::App&, int*);
  bool dynamic = false;  // reads traces (listed under its own heading in --help)
};
// clang-format off
constexpr CommandEntry kCommands[] = {
    {"info", cudatool::cli::register_info},
    {"exports", cudatool::cli::register_exports},
    {"imports", cudatool::cli::register_imports},
    {"cubins", cudatool::cli::register_cubins},
    {"tables", cudatool::cli::register_tables},
    {"functions", cudatool::cli::register_functions},
    {"addr", cudatool::cli::register_addr},
    {"symbolize", cudatool::cli::register_symbolize},
    {"xrefs", cudatool::cli::register_xrefs},
    {"index", cudatool::cli::register_index},
    {"delta", cudatool::cli::register_delta},
    {"history", cudatool::cli::register_history},
    {"abi", cudatool::cli::register_abi},
    {"trace", cudatool::cli::register_trace, true},
    {"import", cudatool::cli::register_import, true},
    {"decode", cudatool::cli::register_decode, true},
    {"stats", cudatool::cli::register_stats, true},
    {"export", cudatool::cli::register_export, true},
    {"ab", cudatool::cli::register_ab, true},
    {"replay", cudatool::cli::register_replay, true},
};
// clang-format on

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cudatool — re-derives how NVIDIA's CUDA userspace driver (libcuda.so) is built and how it "
      "talks to the kernel driver.",
      "cudatool"};
  app.require_subcommand(1);
  app.set_version_flag("--version", CUDATOOL_VERSION);
  app.footer(
      "Run `cudatool COMMAND --help` for the options of one command.\n"
      "Every command prints a table for people; --json prints the same facts for scripts.\n"
      "Exit status: 0 ok, 1 findings (e.g. a divergence), 2 bad input or usage.");
  int exit_code = cudatool::cli::kExitOk;
  // Start-up is a large part of the fast commands' cost: when argv[1] names a command, only that
  // command's options are built; otherwise (help, typos) all of them.
  bool one = false;
  if (argc > 1) {
    for (const auto& c : kCommands) {
      if (c.name == argv[1]) {
        c.add(app, &exit_code);
        one = true;
      }
    }
  }
  if (!one && argc > 1 && argv[1][0] != '-') {
    std::string names;
    for (const auto& c : kCommands) names += fmt::format("{}{}", names.empty() ? "" : ", ", c.name);
    cudatool::cli::print_error(
        fmt::format("unknown command '{}' (commands: {}; see cudatool --help)", argv[1], names));
    return cudatool::cli::kExitBadInput;
  }
  if (!one) {
    for (const auto& c : kCommands) {
      c.add(app, &exit_code);
      app.get_subcommand(std::string(c.name))
          ->group(c.dynamic ? "Dynamic: what a program asks of the kernel driver (traces)"
                            : "Static: a libcuda build, from the file alone");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : cudatool::cli::kExitBadInput;
  }
  return exit_code;
}
