// The function events of a trace (format v4) as `decode`, `stats` and `export` report them: counts
// of calls, how they ended, threads and libraries, and the first notes of damaged records.
#pragma once

#include <string>

#include "record/function_recorder.hpp"
#include "trace/trace_file.hpp"

namespace cudatool {
class JsonWriter;
}

namespace cudatool::cli {

// "# function events: 719,761 calls of 1,234 functions in 3 threads (libcuda.so.580.159.04):
// 719,754 returned, 0 unwound, 7 open"; "" when the trace has none.
std::string function_summary_text(const trace::TraceReader& r, std::string_view prefix);

// "functions": {tables, blocks, threads, calls, returned, unwound, open, functions_called,
// device_marks, lost, not_kept, max_depth, libraries, notes, first_notes}; null when none.
void write_function_summary_json(JsonWriter& w, const trace::TraceReader& r);

// What `--functions` did in a run (trace, replay): "cudatool:  functions: 35,417 planned in
// LIB; 3 tables, 41 blocks (9.1 MB of records)", or why there are none; "" when not asked.
std::string function_outcome_text(const record::FunctionOutcome& f, std::string_view prefix);
// "functions": {globs, active, library, why_not, planned, tables, blocks, records_bytes, lost,
// problems}; null when not asked.
void write_function_outcome_json(JsonWriter& w, const record::FunctionOutcome& f);

}  // namespace cudatool::cli
