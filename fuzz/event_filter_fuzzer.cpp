// Fuzzes the --filter language (trace/event_filter.hpp): the input is an expression. It must parse
// or fail with a one-line error; a parsed filter is evaluated on a few events of every kind.
#include <cstddef>
#include <cstdint>
#include <string>

#include "trace/decode.hpp"
#include "trace/event_filter.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cudatool;
  std::string_view expr(reinterpret_cast<const char*>(data), size);
  const rm::Tables& t = rm::all_branches().back();
  auto f = trace::EventFilter::parse(expr, t);
  if (!f) {
    std::string m = f.error().message();
    if (m.empty()) __builtin_trap();
    return 0;
  }
  static std::vector<trace::Event> events = [] {
    std::vector<trace::Event> v;
    for (int k = 0; k <= static_cast<int>(trace::Sys::kUnknown); ++k) {
      trace::Event ev;
      ev.sys = static_cast<trace::Sys>(k);
      ev.seq = static_cast<uint64_t>(k);
      ev.t_ns = 1000u * static_cast<uint64_t>(k);
      ev.has_duration = k % 2 == 0;
      ev.dur_ns = 500;
      ev.tid = k;
      ev.path = k % 3 == 0 ? "/dev/nvidiactl" : "/dev/nvidia-uvm";
      ev.err = k == 2 ? 25 : 0;
      ev.ret = k == 2 ? -1 : 0;
      if (ev.sys == trace::Sys::kIoctl) {
        ev.request = 0xc020462a;  // NV_ESC_RM_CONTROL with a 32-byte NVOS54
        trace::Buffer b;
        b.role = "arg";
        b.after.assign(32, 0);
        b.after[8] = 0x02;  // cmd 0x20800102
        b.after[9] = 0x01;
        b.after[10] = 0x80;
        b.after[11] = 0x20;
        b.after[28] = 0x1f;  // status
        ev.arg = b;
      }
      v.push_back(ev);
    }
    return v;
  }();
  trace::Decoded d;
  for (const trace::Event& ev : events) {
    trace::decode_event(t, ev, d);
    (void)f->matches(ev, d);
  }
  return 0;
}
