// Names for the functions of a trace's function tables (v4): cudatool's names (exports, `*.impl`,
// export-table slots, fn_<addr>) from the function map of the library a table names, when that
// file is still there with the table's build id (or `lib`, given by the user, is); else
// fn_<addr>. Each library is opened once. What the call trees (decode --functions) and the
// function-level comparison (ab) print.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trace/event.hpp"

namespace cudatool {
class DriverImage;
class FunctionMap;
}  // namespace cudatool

namespace cudatool::trace {

class FunctionNamer {
 public:
  // `lib`: a file to name every table's functions by when its build id matches ("" none).
  explicit FunctionNamer(std::string lib = "");
  FunctionNamer(FunctionNamer&&) noexcept;
  ~FunctionNamer();

  // Function `number` of `t` (null: an unknown table): "cuInit", "cuInit.impl", "fn_1a2b30".
  std::string name(const FunctionTable* t, uint32_t number);
  // Why some tables are named by address only, one line each ("" none).
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Library;
  Library* library_for(const FunctionTable& t);
  std::string lib_;
  std::map<std::string, std::unique_ptr<Library>> by_build_id_;
  std::vector<std::string> notes_;
};

}  // namespace cudatool::trace
