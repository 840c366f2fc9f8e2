// The function-level comparison of two traces with function events (v4; trace/replay
// --functions): each thread role's call tree of A against B's, walked in order from the outermost
// calls (the API calls), to the first function whose behaviour differs — a callee called in one
// run only, a callee called a different number of times, or the same callees and another return
// value. What it reports: the call path from the outermost call to that function, the device
// calls made inside it in each run, and each function of the path with its return value in A
// and in B (how the difference went up to the API call's result).
//
// Callee lists are compared as runs of one callee (a polling loop calls it 2 times in one run, 40
// in the other). A return value that differs, and a run of another length, are the difference
// only when the caller then behaves otherwise (another callee or return value; an outermost
// call's value always): rax of a function that returns nothing in it (void, a float, a time) and
// the turns of a polling loop differ between any two runs to no effect, and are counted (quiet),
// not reported.
//
// Return values are compared as a program would act on them: equal values, values that are
// both addresses (2^32 and above: pointers differ between runs by address-space layout, and an
// int returned in eax leaves the upper half of rax as it was), and each run's own thread or
// process id (gettid, getpid) are the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ab/normalize.hpp"

namespace cudatool::ab {

struct FunctionStep {
  std::string function;
  std::string end_a, end_b;  // "returned", "unwound", "open"
  uint64_t ret_a = 0, ret_b = 0;
  bool same = true;  // the return values are the same (above)
};

struct FunctionDeviceCall {
  uint64_t seq = 0;
  std::string what;  // "NV_ESC_RM_CONTROL NVA06C_CTRL_CMD_GPFIFO_SCHEDULE status=NV_OK"
};

struct FunctionDifference {
  // "callee_only_in_a", "callee_only_in_b", "callee_count", "return_value"
  std::string kind;
  uint32_t thread = 0;  // role
  int32_t tid_a = 0, tid_b = 0;
  std::vector<FunctionStep> path;  // outermost first; the last is the function that differs
  std::string callee;              // the callee concerned (not for return_value)
  uint64_t count_a = 0, count_b = 0;
  // made inside the differing function or its callees
  std::vector<FunctionDeviceCall> devices_a, devices_b;
  std::string
      message;  // one line: "cuDevicePrimaryCtxRetain → … → fn_…: returned 0x1f in B, 0 in A"
};

struct FunctionComparison {
  bool compared = false;  // both traces hold function events
  std::string why_not;    // when not compared: which trace has none
  uint64_t calls_a = 0, calls_b = 0;
  uint64_t threads_a = 0, threads_b = 0;
  std::optional<FunctionDifference> first;  // none: equivalent at the function level
  // Up to the first difference: callers that went on as in the other run though a callee's
  // return value or a run's length differed below them; runs of a callee of another length.
  uint64_t quiet = 0, loop_counts = 0;
  std::vector<std::string> notes;  // naming, damaged records
};

// `lib`: a file to name functions by (as decode --functions-lib); "" the traces' own.
FunctionComparison compare_functions(const NormalizedTrace& a, const NormalizedTrace& b,
                                     const std::string& lib = "");

}  // namespace cudatool::ab
