// The --filter expression language of `decode` and `export` (docs/decode.md): which events of a
// trace to keep, by what the event is (sys, device, thread, time) and by its decoded call (call,
// control command, class, status, handles).
//
//   status!=NV_OK                      calls whose NV_STATUS is set and is not NV_OK
//   failed and device=uvm              UVM calls that failed (status or errno)
//   ctrl=NV2080_CTRL_CMD_GPU_* or class=*CHANNEL*
//   call=NV_ESC_RM_ALLOC,NV_ESC_RM_FREE and not tid=540
//   dur>=1ms                           (durations: ns, us, ms, s)
//   api=cuDevicePrimaryCtxRetain       calls made under that CUDA API call (from the stacks)
//
// The expression is parsed once against the tables of the decoding branch: an exact name that
// the knowledge base does not know is an error (a glob never is), and names resolve to numbers
// there, so evaluation costs a few comparisons per event.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "trace/decode.hpp"

namespace cudatool::trace {

class EventFilter {
 public:
  // An empty (or all-blank) expression keeps every event. Errors name the column, the token and
  // what was expected: "--filter: column 1: unknown field 'stauts' (fields: …)".
  static Result<EventFilter> parse(std::string_view expr, const rm::Tables& tables);

  [[nodiscard]] bool empty() const { return root_ < 0; }
  [[nodiscard]] bool matches(const Event& ev, const Decoded& d) const;
  // With the CUDA API call in progress when the event was made (`api`; "" when none is known:
  // the trace has no stacks, or no frame is an API entry point), which the caller resolves from
  // the event's stack (trace/stack_resolver.hpp) when uses_api() says the expression needs it.
  [[nodiscard]] bool matches(const Event& ev, const Decoded& d, std::string_view api) const;
  [[nodiscard]] bool uses_api() const { return uses_api_; }

  // The field names and flags the language knows, for help texts.
  static std::string_view field_list();
  static std::string_view flag_list();

  struct Node;
  struct Value;

 private:
  bool eval(int node, const Event& ev, const Decoded& d, std::string_view api) const;

  const rm::Tables* tables_ = nullptr;
  std::vector<Node> nodes_;
  int root_ = -1;
  bool uses_api_ = false;
};

struct EventFilter::Value {
  bool is_number = false;
  uint64_t number = 0;
  std::string pattern;  // lower-cased glob, for names
};

struct EventFilter::Node {
  enum Kind : uint8_t { kAnd, kOr, kNot, kCompare, kFlag } kind = kCompare;
  enum Op : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe } op = kEq;
  uint8_t field = 0;  // event_filter.cpp: FieldId / FlagId
  int a = -1, b = -1;
  std::vector<Value> values;
};

}  // namespace cudatool::trace
