// Fuzzes `import` (src/trace/capture_import.hpp): capture lines of any shape, plain or compressed.
// An accepted line must become an event that the trace writer and reader round-trip; the driver
// version it may name (src/trace/capture_probe.hpp) is read from its buffers, bounded by them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/capture_import.hpp"
#include "trace/capture_probe.hpp"
#include "trace/line_source.hpp"
#include "trace/trace_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool::trace;
  auto src = LineSource::from_memory(std::string(reinterpret_cast<const char*>(data), size), "fuzz",
                                     1 << 20);
  std::string_view line;
  uint64_t off = 0;
  bool complete = true;
  Event ev, back;
  std::string out;
  int n = 0;
  while (src->next(line, off, complete) && n++ < 100000) {
    if (!parse_capture_line(line, off, ev).ok()) continue;
    (void)version_named_by(ev);
    out.clear();
    append_event_line(out, ev);
    if (!parse_event_line(std::string_view(out.data(), out.size() - 1), 0, back).ok()) {
      __builtin_trap();
    }
  }
  return 0;
}
