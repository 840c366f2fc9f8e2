// Printing of a crash report (record/crash.hpp) for `trace` and `replay`: text lines for people
// and the JSON object `crash` (docs/json.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/json_writer.hpp"
#include "record/crash.hpp"

namespace cudatool::cli {

// The report, several lines. `device_call`: "made" (trace) or "answered" (replay).
std::string crash_text(const record::CrashReport& c, std::string_view device_call);
// "crash": {…} or null, and "crash_note": why there can be no report, or null.
void write_crash_json(JsonWriter& w, const std::optional<record::CrashReport>& c,
                      std::string_view note);

}  // namespace cudatool::cli
