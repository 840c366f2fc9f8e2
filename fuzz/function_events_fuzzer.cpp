// Fuzzes the function events of trace format v4 (src/trace/function_events.hpp,
// function_calls.hpp, the fn_table / fn_block lines of trace_json_functions.cpp): hostile
// tables, blocks and records — unbalanced entries and returns, bogus function numbers, huge
// depths and counts, cut numbers — must give an error or a cut tree with notes, never a crash or
// a runaway. The first byte picks the input: 0, the rest is one block's records; else a trace.
// Every table and block the reader accepts must be written back and read again the same; every
// call tree must be consistent (a parent before its child, one level up).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "trace/function_calls.hpp"
#include "trace/function_events.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

namespace {

using namespace cudatool::trace;

void check_calls(const std::vector<FunctionTable>& tables,
                 const std::vector<FunctionBlock>& blocks) {
  CallLimits lim;
  lim.max_depth = 64;
  lim.max_calls = 100000;
  for (const ThreadCalls& t : build_function_calls(tables, blocks, lim)) {
    FUZZ_CHECK(t.notes.size() <= lim.max_notes + 1);
    for (size_t i = 0; i < t.calls.size(); ++i) {
      const FunctionCall& c = t.calls[i];
      FUZZ_CHECK(c.depth < lim.max_depth);
      if (c.parent < 0) {
        FUZZ_CHECK(c.depth == 0);
        continue;
      }
      FUZZ_CHECK(static_cast<size_t>(c.parent) < i);
      FUZZ_CHECK(t.calls[static_cast<size_t>(c.parent)].depth + 1 == c.depth);
    }
    for (const DeviceMark& d : t.devices) FUZZ_CHECK(d.call < static_cast<int64_t>(t.calls.size()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == 0) {
    FunctionTable t;
    t.id = 1;
    t.starts = {0x1000, 0x2000, 0x3000};
    FunctionBlock b;
    b.table = 1;
    b.data.assign(data + 1, data + size);
    std::vector<FunctionEvent> ev;
    (void)decode_function_block(b, ev);
    check_calls({t}, {b});
    // Renumbering the device marks (a replay's) keeps every record it could read, and reads back.
    FunctionBlock re = b;
    (void)remap_device_seqs(re, [](uint64_t s) { return std::optional<uint64_t>(s ^ 1); });
    std::vector<FunctionEvent> ev2;
    FUZZ_CHECK(decode_function_block(re, ev2).ok());
    FUZZ_CHECK(ev2.size() == ev.size());
    // Device calls placed by time (ptrace mode) at the times the records give and around them:
    // every readable record kept, one DEVICE record more per call, and it reads back.
    std::vector<TimedDeviceCall> calls;
    for (size_t i = 0; i < ev.size() && calls.size() < 8; i += 3) {
      calls.push_back({b.pid, b.tid, ev[i].t_ns + (i & 1), i});
    }
    calls.push_back({b.pid, b.tid, 0, 1000});
    std::vector<FunctionBlock> placed{re};
    cudatool::Status st = place_device_calls(placed, calls);
    std::vector<FunctionEvent> ev3;
    FUZZ_CHECK(decode_function_block(placed[0], ev3).ok());
    if (st.ok()) FUZZ_CHECK(ev3.size() == ev2.size() + calls.size());
    check_calls({t}, placed);
    std::vector<ThreadCalls> threads = build_function_calls({t}, placed);
    for (const auto& [seq, o] : outermost_calls(threads)) {
      (void)seq;
      FUZZ_CHECK(o.call != nullptr && o.call->parent < 0);
    }
    return 0;
  }
  auto r = TraceReader::from_memory(std::string(reinterpret_cast<const char*>(data), size), "fuzz",
                                    1 << 20);
  if (!r) return 0;
  Event ev;
  for (int n = 0; (*r)->next(ev) && n < 100000; ++n) {
  }
  std::string line;
  for (const FunctionTable& t : (*r)->function_tables()) {
    line.clear();
    append_function_table_line(line, t);
    FunctionTable again;
    FUZZ_CHECK(
        parse_function_table_line(std::string_view(line).substr(0, line.size() - 1), 0, again)
            .ok());
    FUZZ_CHECK(again.starts == t.starts && again.id == t.id && again.base == t.base);
  }
  for (const FunctionBlock& b : (*r)->function_blocks()) {
    line.clear();
    append_function_block_line(line, b);
    FunctionBlock again;
    FUZZ_CHECK(
        parse_function_block_line(std::string_view(line).substr(0, line.size() - 1), 0, again)
            .ok());
    FUZZ_CHECK(again.data == b.data && again.part == b.part && again.t_ns == b.t_ns);
  }
  check_calls((*r)->function_tables(), (*r)->function_blocks());
  return 0;
}
