// Reading traces: events per second of cudatool's reader (the pull JSON reader) against
// nlohmann/json parsing the same lines into a tree (what a C++ user would write instead). The
// decoder issue needs >= 1M events/s per core for typical events.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace_file.hpp"
#include "trace/trace_json.hpp"

namespace {

using namespace cudatool::trace;

// A trace of n events shaped like the real traffic: RM controls with 32-byte arguments and
// nested parameters of `nested` bytes, opens, mmaps.
std::string make_trace(int n, size_t nested) {
  std::string out;
  Header h;
  h.argv = {"./work"};
  h.mode = "ptrace";
  append_header_line(out, h);
  for (int i = 0; i < n; ++i) {
    Event e;
    e.seq = static_cast<uint64_t>(i);
    e.t_ns = 1000ULL * static_cast<uint64_t>(i);
    e.dur_ns = 800;
    e.has_duration = true;
    e.pid = e.tid = 4242;
    if (i % 20 == 0) {
      e.sys = Sys::kOpen;
      e.path = "/dev/nvidiactl";
      e.open_flags = 0x80002;
      e.ret = 9;
    } else {
      e.sys = Sys::kIoctl;
      e.fd = 9;
      e.path = "/dev/nvidiactl";
      e.request = 0xc020462a;
      Buffer a;
      a.role = "arg";
      a.addr = 0x7ffe9e9e37a0;
      a.size = 32;
      a.before.assign(32, static_cast<uint8_t>(i));
      a.after = a.before;
      e.arg = a;
      Buffer p;
      p.role = "params";
      p.addr = 0x7ffe9e9e3800;
      p.size = nested;
      p.before.assign(nested, 0x5a);
      p.after = p.before;
      e.nested.push_back(p);
    }
    append_event_line(out, e);
  }
  return out;
}

void BM_TraceReader(benchmark::State& state) {
  std::string text = make_trace(10000, static_cast<size_t>(state.range(0)));
  int64_t events = 0;
  for (auto _ : state) {
    auto r = TraceReader::from_memory(text, "bench");
    Event ev;
    while ((*r)->next(ev)) ++events;
  }
  state.SetItemsProcessed(events);
  state.SetBytesProcessed(static_cast<int64_t>(text.size()) * state.iterations());
}
BENCHMARK(BM_TraceReader)->Arg(16)->Arg(64)->Arg(1024);

void BM_NlohmannLines(benchmark::State& state) {
  std::string text = make_trace(10000, static_cast<size_t>(state.range(0)));
  int64_t events = 0;
  for (auto _ : state) {
    size_t pos = text.find('\n') + 1;  // header
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      auto j = nlohmann::json::parse(text.begin() + static_cast<ptrdiff_t>(pos),
                                     text.begin() + static_cast<ptrdiff_t>(nl));
      benchmark::DoNotOptimize(j);
      ++events;
      pos = nl + 1;
    }
  }
  state.SetItemsProcessed(events);
  state.SetBytesProcessed(static_cast<int64_t>(text.size()) * state.iterations());
}
BENCHMARK(BM_NlohmannLines)->Arg(16)->Arg(64)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
