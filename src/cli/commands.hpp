// One registration function per subcommand (one file each in cli/). Each adds its subcommand to
// the app and, when it runs, stores its exit status in *exit_code. A new command adds its
// declaration here and one line to kCommands in main.cpp.
#pragma once

namespace CLI {
class App;
}

namespace cudatool::cli {

void register_info(CLI::App& app, int* exit_code);
void register_exports(CLI::App& app, int* exit_code);
void register_imports(CLI::App& app, int* exit_code);
void register_delta(CLI::App& app, int* exit_code);
void register_history(CLI::App& app, int* exit_code);
void register_abi(CLI::App& app, int* exit_code);
void register_tables(CLI::App& app, int* exit_code);
void register_functions(CLI::App& app, int* exit_code);
void register_addr(CLI::App& app, int* exit_code);
void register_symbolize(CLI::App& app, int* exit_code);
void register_xrefs(CLI::App& app, int* exit_code);
void register_index(CLI::App& app, int* exit_code);
void register_trace(CLI::App& app, int* exit_code);
void register_import(CLI::App& app, int* exit_code);
void register_cubins(CLI::App& app, int* exit_code);
void register_decode(CLI::App& app, int* exit_code);
void register_stats(CLI::App& app, int* exit_code);
void register_export(CLI::App& app, int* exit_code);
void register_ab(CLI::App& app, int* exit_code);
void register_replay(CLI::App& app, int* exit_code);

}  // namespace cudatool::cli
