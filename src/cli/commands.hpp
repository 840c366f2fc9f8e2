// One registration function per subcommand (one file each in cli/). Each adds its subcommand to
// the app and, when it runs, stores its exit status in *exit_code.
#pragma once

namespace CLI {
class App;
}

namespace cudatool::cli {

void register_info(CLI::App& app, int* exit_code);
void register_exports(CLI::App& app, int* exit_code);
void register_imports(CLI::App& app, int* exit_code);
void register_cubins(CLI::App& app, int* exit_code);

}  // namespace cudatool::cli
