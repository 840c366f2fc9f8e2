// `decode --functions`: a trace's function events (v4) as call trees, thread by thread — each
// call indented by its depth with its return value, the device calls made inside it nested
// under it (decoded as `decode` prints them), filtered by function globs (a matching call is
// shown with the path down to it and its whole subtree) and by --filter (an outermost call is
// shown when a device call inside it matches, `api=` naming that outermost call).
#pragma once

#include <string>

#include "cli/trace_input.hpp"
#include "trace/event_filter.hpp"

namespace cudatool::cli {

struct FunctionTreeOptions {
  std::string globs = "*";  // functions to show, comma-separated, case-insensitive, '!' excludes
  std::string lib;          // name the functions by this file (its build id must be the table's)
  std::string filter;       // as given (for the header)
  bool json = false;        // JSON lines: header, one object per call or device call, summary
};

// Prints the trees of `in` (read to its end here). Exit status: 0, or 2 for damaged lines.
int print_function_trees(TraceInput& in, const trace::EventFilter& filter,
                         const FunctionTreeOptions& o);

}  // namespace cudatool::cli
