// JSON forms of delta and history reports (schemas cudatool.delta/1, cudatool.history/1).
#pragma once

#include "analysis/delta.hpp"
#include "base/json_writer.hpp"

namespace cudatool::cli {

void write_delta_json(JsonWriter& w, const Delta& d);
void write_history_json(JsonWriter& w, const History& h);

}  // namespace cudatool::cli
