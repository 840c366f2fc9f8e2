// Replayed calls (the shims' log records) as trace events, so that the replayed run is a trace
// like any other (-o): `cudatool ab RECORDED REPLAYED` compares them.
#pragma once

#include <string>

#include "replay/answers.hpp"
#include "replay/replay_log.hpp"
#include "trace/event.hpp"

namespace cudatool::replay {

// The event a log record stands for (device calls, forks, execs); Sys::kUnknown for the rest.
trace::Event event_of(const LogRecord& r, const AnswerTable& table);

}  // namespace cudatool::replay
