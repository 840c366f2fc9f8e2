// A decoded trace as Chrome/Perfetto trace-event JSON (`cudatool export --format perfetto`), for
// ui.perfetto.dev or chrome://tracing: one track per thread (pid/tid), each event a complete
// ("X") slice named by its decoded call, with the call's facts as args.
//
// Format: the Trace Event Format's JSON object form, {"traceEvents": [...], "displayTimeUnit":
// "ns", "metadata": {...}}; timestamps and durations in microseconds (three decimals keep the
// nanoseconds). Process and thread names are "M" (metadata) events emitted before a track's
// first slice. Written incrementally into a string the caller flushes, so memory stays flat.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/json_writer.hpp"
#include "trace/decode.hpp"
#include "trace/event.hpp"
#include "trace/function_calls.hpp"

namespace cudatool::trace {

class PerfettoWriter {
 public:
  PerfettoWriter(const rm::Tables& tables, const Header& header, std::string_view source);
  // The opening of the object, then one slice per add(); finish() closes it.
  void begin(std::string& out);
  // `api`: the CUDA API call in progress (from the event's stack), an arg when not empty.
  void add(std::string& out, const Event& ev, const Decoded& d, std::string_view api = {});
  // A call of a library function (function events, trace/replay --functions): a slice of
  // category "function" on its thread's track, from its entry to its return, so that the
  // viewer nests it under its caller and the device calls made inside it under it.
  void add_function(std::string& out, int32_t pid, int32_t tid, std::string_view name,
                    const FunctionCall& c);
  void finish(std::string& out, uint64_t events, uint64_t bad_lines);

  // The slice name of a call: "NV_ESC_RM_CONTROL NV2080_CTRL_CMD_GPU_GET_INFO_V2",
  // "NV_ESC_RM_ALLOC HOPPER_CHANNEL_GPFIFO_A", "UVM_FREE", "open /dev/nvidiactl", "ioctl 0x…?".
  static void append_name(std::string& out, const rm::Tables& t, const Event& ev, const Decoded& d);

 private:
  void metadata(std::string& out, const Event& ev);

  const rm::Tables& t_;
  const Header& h_;
  std::string source_;
  std::set<int32_t> pids_;
  std::set<std::pair<int32_t, int32_t>> threads_;
  std::string scratch_;
  std::string args_;  // one slice's args object, written by args_writer_ (reused: no allocation)
  JsonWriter args_writer_{args_, false};
  bool first_ = true;
};

}  // namespace cudatool::trace
