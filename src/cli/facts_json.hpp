// JSON forms of delta and history reports (schemas cudatool.delta/1, cudatool.history/1).
#pragma once

#include <functional>

#include "analysis/delta.hpp"
#include "base/json_writer.hpp"

namespace cudatool::cli {

// `extra` writes more members of the top-level object (delta's "abi").
void write_delta_json(JsonWriter& w, const Delta& d,
                      const std::function<void(JsonWriter&)>& extra = {});
void write_history_json(JsonWriter& w, const History& h,
                        const std::function<void(JsonWriter&)>& extra = {});

}  // namespace cudatool::cli
