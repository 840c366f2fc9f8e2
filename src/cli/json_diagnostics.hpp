// The "diagnostics" member every command's --json carries.
#pragma once

#include "base/error.hpp"
#include "base/json_writer.hpp"

namespace cudatool::cli {

// "diagnostics": the message of each damage a parser stepped over (docs/json.md).
inline void write_diagnostics(JsonWriter& w, const Diagnostics& d) {
  w.key("diagnostics").begin_array();
  for (const auto& e : d.items()) w.value(e.message());
  w.end_array();
}

}  // namespace cudatool::cli
