// Fuzzes what `decode`, `stats` and `export` do with a trace file: the reader, the decoders, a
// few --filter expressions, the statistics (object tree, milestones, slowest calls) and the
// Perfetto writer, on arbitrary bytes read as a trace. Invariants: nothing crashes or hangs;
// every JSON the commands would print (the decoded call, the Perfetto document) is valid JSON.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/json_writer.hpp"
#include "trace/decode.hpp"
#include "trace/event_filter.hpp"
#include "trace/perfetto.hpp"
#include "trace/trace_file.hpp"
#include "trace/trace_stats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  auto r = trace::TraceReader::from_memory(std::string(reinterpret_cast<const char*>(data), size),
                                           "fuzz", 1 << 20);
  if (!r) return 0;
  const rm::Tables& t = rm::tables_for_driver((*r)->header().driver_version.value_or(""));
  static const char* kExprs[] = {"failed or status!=NV_OK", "class=*CHANNEL* and tid<100",
                                 "call=NV_ESC_RM_ALLOC,UVM_* or not device=nvidiactl",
                                 "dur>=1us or handle=0x5c000001 or errno=ENOTTY"};
  std::vector<trace::EventFilter> filters;
  for (const char* e : kExprs) {
    auto f = trace::EventFilter::parse(e, t);
    if (!f) __builtin_trap();
    filters.push_back(std::move(*f));
  }
  trace::StatsBuilder stats(t, 5);
  trace::PerfettoWriter pw(t, (*r)->header(), "fuzz");
  std::string perfetto, line, js;
  pw.begin(perfetto);
  trace::Event ev;
  trace::Decoded d;
  uint64_t n = 0;
  while ((*r)->next(ev) && n < 20000) {
    ++n;
    trace::decode_event(t, ev, d);
    for (const auto& f : filters) (void)f.matches(ev, d);
    stats.add(ev, d);
    pw.add(perfetto, ev, d);
    line.clear();
    trace::append_line(line, d);
    js.clear();
    JsonWriter w(js, false);
    trace::write_json(w, d);
    if (!nlohmann::json::accept(js)) __builtin_trap();
  }
  trace::TraceStats s = stats.finish();
  (void)s.first_context();
  pw.finish(perfetto, n, (*r)->diagnostics().count());
  if (!nlohmann::json::accept(perfetto)) __builtin_trap();
  return 0;
}
