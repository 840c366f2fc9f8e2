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

namespace cudatool::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitBadInput = 2;

// Opens LIB, or when `path` is empty the system's libcuda.so.1 (saying on stderr which file was
// used and how it was found). Prints a one-line error and returns null on failure.
std::unique_ptr<DriverImage> open_library(const std::string& path);

// Prints each diagnostic as "cudatool: warning: <message>" on stderr; returns kExitBadInput when
// there were any, else kExitOk.
int report_diagnostics(const Diagnostics& diag);
// "cudatool: error: <message>" on stderr.
void print_error(const Error& e);
void print_error(std::string_view message);

// Writes the whole string to stdout.
void emit(std::string_view text);

// Whether OUTPUT (the value of `option`, "-o" or "--html") can be written without destroying
// what the command reads: not empty, not a directory, its directory existing, and not the same
// file as any of `inputs` (by device and inode, so another spelling or a hard or symbolic link
// of an input is caught; a file that does not exist yet is none of them). Prints the error and
// returns false when not. "-" (standard output) is always fine.
bool usable_output(std::string_view option, const std::string& output,
                   std::initializer_list<std::string_view> inputs);

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
