// What every subcommand shares: opening the library argument (or the system's libcuda.so.1),
// printing diagnostics, aligned text tables, and the exit-status convention
// (0 ok, 1 findings such as a divergence, 2 bad input or usage).
#pragma once

#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/driver_image.hpp"
#include "base/error.hpp"

namespace CLI {
class App;
}

namespace cudatool::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitBadInput = 2;

// Opens LIB, or when `path` is empty the system's libcuda.so.1 (saying on stderr which file was
// used and how it was found). Prints a one-line error and returns null on failure.
std::unique_ptr<DriverImage> open_library(const std::string& path);
// open_library() for a command that reads one library and then ends: the image is never
// destroyed, and the kernel takes its memory and mapping back at exit in one piece. Freeing its
// maps and tables one by one, and unmapping the library after two threads had touched it, was
// ~0.35 ms of the 4 ms `functions` took on 550.163.01. Null on failure, as open_library().
DriverImage* open_library_until_exit(const std::string& path);

// Prints each diagnostic as "cudatool: warning: <message>" on stderr; returns kExitBadInput when
// there were any, else kExitOk.
int report_diagnostics(const Diagnostics& diag);
// "cudatool: error: <message>" on stderr.
void print_error(const Error& e);
void print_error(std::string_view message);
// "cudatool: hint: <message>" on stderr: what to do about the error just printed.
void print_hint(std::string_view message);

// Writes the whole string to stdout.
void emit(std::string_view text);
// Says that the command wrote to stdout (emit() says it itself; other writers to fd 1 call it).
void note_stdout_written();

// Errors under --json, for every command in one place: main() turns this on when the command
// line asks for JSON; print_error, print_hint and report_diagnostics then also keep what they
// print, and json_error_exit() prints it as one object on stdout,
//   {"error": {"command", "exit_status", "message", "structure", "field", "offset", "reason",
//              "more": [messages], "hints": [...], "warnings": [...]}}
// when the command failed (exit status not 0) after printing an error and wrote nothing on stdout
// (its own JSON answers then). The text lines stay on stderr. Returns exit_status.
void keep_json_errors(std::string_view command);
int json_error_exit(int exit_status);

// What an output option writes: an existing file of another kind is not replaced without
// --force (`index LIB -o copy.so` must not destroy a library that happens to be there).
enum class OutputKind : uint8_t {
  kTrace,       // a cudatool trace (trace, import, replay -o)
  kSqlite,      // an SQLite database (index -o)
  kSymbolFile,  // an ELF symbol file: .text without file bytes (symbolize -o)
  kJson,        // JSON (export -o)
  kHtml,        // an HTML page (ab --html)
  kText,        // text without NUL bytes (replay --report)
};

// Whether OUTPUT (the value of `option`, "-o" or "--html") can be written without destroying
// what the command reads or another file: not empty, not a directory, its directory existing,
// not the same file as any of `inputs` (by device and inode, so another spelling or a hard or
// symbolic link of an input is caught; a file that does not exist yet is none of them), and,
// unless `force`, when it exists and is not empty, a file of `kind` (output_check.cpp says how
// each is recognised). Prints the error and returns false when not. "-" (standard output) is
// always fine.
bool usable_output(std::string_view option, const std::string& output,
                   std::initializer_list<std::string_view> inputs, OutputKind kind, bool force);
// The --force flag of a command with an output option.
void add_force_flag(CLI::App* cmd, bool& force);

// A text table: columns are left-aligned unless marked numeric (right-aligned).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers, std::vector<bool> right_align = {});
  void add(std::vector<std::string> row);
  [[nodiscard]] std::string render(std::string_view indent = "") const;
  [[nodiscard]] size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// "0x1a2b"
std::string hex(uint64_t v);
// "27.4 MiB" style approximation for people (JSON always carries exact bytes).
std::string human_size(uint64_t bytes);

}  // namespace cudatool::cli
