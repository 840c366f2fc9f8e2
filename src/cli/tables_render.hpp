// Printing for `cudatool tables` (cmd_tables.cpp: options and text; tables_json.cpp: JSON).
#pragma once

#include <string>
#include <vector>

#include "analysis/driver_tables.hpp"

namespace cudatool::cli {

struct TablesOptions {
  std::string lib;
  bool json = false;
  std::vector<std::string> kinds;  // procaddress, exporttables, dispatch, errors; empty: all
  bool no_slots = false;           // text output: leave out each export table's slots
  [[nodiscard]] bool want(std::string_view kind) const {
    if (kinds.empty()) return true;
    for (const auto& k : kinds)
      if (k == kind) return true;
    return false;
  }
};

std::string render_tables_json(DriverImage& img, DriverTables& t, const TablesOptions& o);

}  // namespace cudatool::cli
