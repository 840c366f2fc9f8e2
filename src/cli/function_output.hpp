// Printing shared by `functions`, `addr` and `symbolize`: one function as a JSON object, the
// summary of a function map, and the map's findings (search-table disagreements).
#pragma once

#include <string>

#include "analysis/function_map.hpp"
#include "base/json_writer.hpp"

namespace CLI {
class App;
}

namespace cudatool {
class DriverImage;
}

namespace cudatool::cli {

// Which names the function map carries: the exports only, or also what the driver tables give
// (implementations behind the wrappers, procaddress-only functions, export-table slots).
struct NameOptions {
  std::string names = "all";  // "all" | "exports"
};
// Adds --names to a command.
void add_names_option(CLI::App* cmd, NameOptions& o);
// The image's function map with the requested names attached.
const FunctionMap& named_function_map(DriverImage& img, const NameOptions& o);

// {"start", "end", "size", "section", "name", "names": [{"name", "source"}], "fde",
//  "in_hdr_table", "has_lsda"}
void write_function_json(JsonWriter& w, const FunctionMap& map, const Function& f);

// Coverage of the executable sections by FDEs.
struct Coverage {
  uint64_t exec_bytes = 0;
  uint64_t gap_bytes = 0;
  uint64_t gaps = 0, padding_gaps = 0, code_gaps = 0, no_byte_gaps = 0;
};
Coverage coverage(const FunctionMap& map, const std::vector<Gap>& gaps);

// "eh_frame": {…}, "eh_frame_hdr": {…} members of a JSON object.
void write_map_sources_json(JsonWriter& w, const FunctionMap& map);
// Lines for people: where the map comes from and whether the search table agrees.
std::string map_summary_text(const FunctionMap& map);

// For commands that build on the map (xrefs, index): when .eh_frame_hdr's search table disagrees
// with .eh_frame (a damaged or doctored file: every function of it is where .eh_frame says), a
// warning on stderr that says so and where to see it, and kExitBadInput; else kExitOk.
int warn_damaged_function_map(const FunctionMap& map);

}  // namespace cudatool::cli
