// Printing for `cudatool replay`: the report and the bisect report, as text for people and as
// JSON (schemas cudatool.replay/1 and cudatool.replay-bisect/1, docs/json.md).
#pragma once

#include <string>

#include "replay/bisect.hpp"
#include "replay/session.hpp"

namespace cudatool::cli {

std::string render_replay_text(const replay::ReplayReport& r);
std::string render_replay_json(const replay::ReplayReport& r);
std::string render_bisect_text(const replay::BisectReport& r);
std::string render_bisect_json(const replay::BisectReport& r);

}  // namespace cudatool::cli
