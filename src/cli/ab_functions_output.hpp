// The function-level part of `ab` (ab/function_diff.hpp), for people and as JSON `functions`.
#pragma once

#include <string>

#include "ab/function_diff.hpp"

namespace cudatool {
class JsonWriter;
}

namespace cudatool::cli {

// "\nfunctions: …" lines: the first function whose behaviour differs, its path with the return
// values in A and B, the device calls inside it; "" when neither trace has function events.
std::string ab_functions_text(const ab::FunctionComparison& f);
// "functions": {compared, why_not, calls_a, calls_b, threads_a, threads_b, first: {kind, thread,
// tid_a, tid_b, function, callee, count_a, count_b, message, path: [{function, ret_a, ret_b,
// end_a, end_b, same}], devices_a: [{seq, call}], devices_b}, notes}.
void write_ab_functions_json(JsonWriter& w, const ab::FunctionComparison& f);

}  // namespace cudatool::cli
