// Fuzzes the trace reader (src/trace/trace_file.hpp, trace_json.hpp): plain or compressed input,
// header, events, trailer, damaged and cut lines, NUL padding. Every event it accepts must be
// written back by the writer and read again to the same line (nothing lost, nothing invented).
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool::trace;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto r = TraceReader::from_memory(std::move(bytes), "fuzz", 1 << 20);
  if (!r) return 0;
  std::string header;
  append_header_line(header, (*r)->header());
  Event ev, again;
  std::string once, twice;
  int n = 0;
  while ((*r)->next(ev) && n++ < 100000) {
    once.clear();
    append_event_line(once, ev);
    std::string_view line(once.data(), once.size() - 1);  // without its '\n'
    if (!parse_event_line(line, 0, again).ok()) __builtin_trap();
    twice.clear();
    append_event_line(twice, again);
    if (once != twice) __builtin_trap();
  }
  if ((*r)->trailer()) {
    std::string t;
    append_trailer_line(t, *(*r)->trailer());
  }
  return 0;
}
