// The whole cross-reference index of a library as one SQLite database (docs/xrefs.md, "The
// SQLite index"): functions with their names, sizes and sections; references by kind; strings
// and their users; imports, PLT entries and their call sites; exports; the driver tables' rows.
// For the scripts people write against Ghidra exports. Written to FILE.tmp, then renamed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/driver_image.hpp"
#include "base/error.hpp"

namespace cudatool {

inline constexpr std::string_view kIndexSchema = "cudatool.index/1";

struct IndexStats {
  // Rows written per table, in the order the tables are created.
  std::vector<std::pair<std::string, uint64_t>> rows;
  uint64_t file_size = 0;
};

// Builds the XrefIndex facet (and the function names of the driver tables) and writes the
// database to `path`, replacing a file that is there (":memory:": an in-memory database that
// is dropped when written, for the fuzzer).
Result<IndexStats> write_xref_database(DriverImage& img, const std::string& path);

}  // namespace cudatool
