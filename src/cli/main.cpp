// cudatool: what a libcuda build contains, and what a CUDA program asks of the kernel driver.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"

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
  cudatool::cli::register_info(app, &exit_code);
  cudatool::cli::register_exports(app, &exit_code);
  cudatool::cli::register_imports(app, &exit_code);
  cudatool::cli::register_cubins(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : cudatool::cli::kExitBadInput;
  }
  return exit_code;
}
