// Fuzzes the trace reader (src/trace/trace_file.hpp, trace_json.hpp): plain or compressed input,
// header, events, trailer, damaged and cut lines, NUL padding. Every event it accepts must be
// written back by the writer and read again to the same line (nothing lost, nothing invented).
// Plain input is also read compressed, where every line is found by a scan for its end before it
// is parsed: the events and reports must be those of the plain reading, which finds the end of an
// event line by parsing it.
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

namespace {

using cudatool::trace::Event;
using cudatool::trace::TraceReader;

// Every event line and report of a reading.
std::pair<std::vector<std::string>, std::vector<std::string>> read_all(std::string bytes) {
  std::pair<std::vector<std::string>, std::vector<std::string>> out;
  auto r = TraceReader::from_memory(std::move(bytes), "fuzz", 1 << 20);
  if (!r) {
    out.second.push_back(r.error().message());
    return out;
  }
  Event ev;
  while ((*r)->next(ev) && out.first.size() < 100000) {
    out.first.emplace_back();
    cudatool::trace::append_event_line(out.first.back(), ev);
  }
  for (const auto& d : (*r)->diagnostics().items()) out.second.push_back(d.message());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool::trace;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == '{') {
    std::string packed(ZSTD_compressBound(size), '\0');
    size_t n = ZSTD_compress(packed.data(), packed.size(), data, size, 1);
    if (ZSTD_isError(n)) __builtin_trap();
    packed.resize(n);
    if (read_all(bytes) != read_all(packed)) __builtin_trap();
  }
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
