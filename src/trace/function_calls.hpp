// The function calls of a trace (v4), thread by thread: the records of each thread's blocks
// (trace/function_events.hpp), in order, turned into calls with their nesting, return values and
// the device calls made inside them. What the call trees (decode --functions), the function-level
// comparison (ab) and the crash reports are built on.
//
// Hostile or damaged records never stop the walk: a return with no open call is ignored, an
// UNWIND of more calls than are open closes them all, a function number outside its table is
// kept and flagged, calls deeper than the depth limit are counted but not kept, a missing block
// (a gap in a thread's parts) is said; each says so once per thread in `notes`.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/event.hpp"

namespace cudatool::trace {

struct FunctionCall {
  enum class End : uint8_t {
    kReturned,  // its return was recorded: `ret` holds rax
    kUnwound,   // it ended without returning (longjmp, the thread or process ended inside it)
    kOpen,      // still open where the thread's records end
  };
  uint32_t function = 0;  // number in the thread's table
  uint32_t depth = 0;     // 0: outermost of what the thread recorded
  int64_t parent = -1;    // index in ThreadCalls::calls; -1 at depth 0
  uint64_t t_enter = 0;   // ns since the trace's t0
  uint64_t t_exit = 0;    // when it returned or was unwound; the thread's last time when open
  uint64_t caller = 0;    // the return address it was called with; 0 for tail and inherited calls
  uint64_t ret = 0;       // rax, when End::kReturned
  End end = End::kOpen;
  bool tail = false;              // entered by a tail jump of its parent
  bool inherited = false;         // open in the parent when the process forked
  bool unknown_function = false;  // its number is outside the table
};
std::string_view call_end_name(FunctionCall::End e);  // "returned", "unwound", "open"

// A device call made while the thread was inside `call` (-1: outside every recorded call).
struct DeviceMark {
  uint64_t seq = 0;
  int64_t call = -1;
  uint64_t t_ns = 0;
};

struct ThreadCalls {
  int32_t pid = 0;
  int32_t tid = 0;
  uint64_t table = 0;                        // the FunctionTable id of its first block
  const FunctionTable* table_ptr = nullptr;  // null when the trace has no such table
  std::vector<FunctionCall> calls;           // in the order they were entered
  std::vector<DeviceMark> devices;
  uint64_t records = 0;
  uint64_t lost = 0;       // calls the recorder could not record (LOST records)
  uint64_t not_kept = 0;   // calls past the depth or count limit: counted, not kept
  uint32_t max_depth = 0;  // deepest nesting seen
  std::vector<std::string> notes;
};

struct CallLimits {
  uint32_t max_depth = 4096;         // calls nested deeper are counted, not kept
  uint64_t max_calls = 100'000'000;  // across all threads
  size_t max_notes = 16;             // per thread
};

// `tables` and `blocks` as a TraceReader returns them. Threads in the order of their first block.
std::vector<ThreadCalls> build_function_calls(const std::vector<FunctionTable>& tables,
                                              const std::vector<FunctionBlock>& blocks,
                                              const CallLimits& limits = {});

// The outermost recorded call each device call was made inside, by the device call's seq (device
// calls outside every recorded call are left out). With only libcuda's exports recorded
// (`--functions=cu*,!*.*`), that is the CUDA API call in progress: what names it where a trace
// has no call stacks (explore, replay.md "Function calls").
struct OutermostCall {
  const ThreadCalls* thread = nullptr;
  const FunctionCall* call = nullptr;
};
std::unordered_map<uint64_t, OutermostCall> outermost_calls(
    const std::vector<ThreadCalls>& threads);

// What `decode`, `stats` and `export` say of a trace's function events: counts.
struct FunctionSummary {
  uint64_t tables = 0, blocks = 0, threads = 0;
  uint64_t calls = 0, returned = 0, unwound = 0, open = 0;
  uint64_t functions_called = 0;  // distinct (table, function) pairs
  uint64_t device_marks = 0;      // device calls the function records place
  uint64_t lost = 0, not_kept = 0;
  uint32_t max_depth = 0;
  std::vector<std::string> libraries;    // the tables' paths, each once
  uint64_t notes = 0;                    // notes of all threads
  std::vector<std::string> first_notes;  // "pid 4711 tid 4712: …", the first few
};
FunctionSummary summarize_functions(const std::vector<FunctionTable>& tables,
                                    const std::vector<FunctionBlock>& blocks);

}  // namespace cudatool::trace
