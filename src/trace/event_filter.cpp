// Evaluation of the --filter language (docs/decode.md); the parser is event_filter_parse.cpp.
#include "trace/event_filter.hpp"

#include "base/glob_match.h"
#include "trace/event_filter_lang.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

namespace cudatool::trace {

using rm::ClassEntry;
using rm::CtrlEntry;
using rm::device_name;
using rm::Tables;
namespace {

using namespace filter_detail;  // NOLINT(google-build-using-namespace)

// What an event holds for a field: a number and/or a name; absent when it has neither.
struct Got {
  bool present = false;
  bool has_number = false;
  uint64_t number = 0;
  std::string_view name;
};

bool compare(EventFilter::Node::Op op, bool is_signed, uint64_t a, uint64_t b) {
  if (is_signed) {
    auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    switch (op) {
      case EventFilter::Node::kLt:
        return x < y;
      case EventFilter::Node::kLe:
        return x <= y;
      case EventFilter::Node::kGt:
        return x > y;
      case EventFilter::Node::kGe:
        return x >= y;
      default:
        return x == y;
    }
  }
  switch (op) {
    case EventFilter::Node::kLt:
      return a < b;
    case EventFilter::Node::kLe:
      return a <= b;
    case EventFilter::Node::kGt:
      return a > b;
    case EventFilter::Node::kGe:
      return a >= b;
    default:
      return a == b;
  }
}

Got got_number(std::optional<uint32_t> v) {
  Got g;
  if (v) {
    g.present = g.has_number = true;
    g.number = *v;
  }
  return g;
}

Got got_of(FieldId id, const Tables& t, const Event& ev, const Decoded& d, std::string_view api) {
  Got g;
  auto num = [&](uint64_t v) {
    g.present = g.has_number = true;
    g.number = v;
  };
  auto name = [&](std::string_view s) {
    if (!s.empty()) {
      g.present = true;
      g.name = s;
    }
  };
  switch (id) {
    case kSys:
      name(ev.sys == Sys::kUnknown && !ev.sys_raw.empty() ? std::string_view(ev.sys_raw)
                                                          : sys_name(ev.sys));
      break;
    case kCall:
      name(d.call);
      break;
    case kCtrl:
      g = got_number(d.cmd);
      if (d.cmd) {
        if (const CtrlEntry* c = t.find_control(*d.cmd)) g.name = c->name;
      }
      break;
    case kClass:
      g = got_number(d.h_class);
      if (d.h_class) {
        if (const ClassEntry* c = t.find_class(*d.h_class)) g.name = c->name;
      }
      break;
    case kStatus:
      g = got_number(d.status);
      g.name = d.status_name;
      break;
    case kErrno:
      if (ev.err != 0) {
        num(static_cast<uint32_t>(ev.err));
        if (const char* n = strerrorname_np(ev.err)) g.name = n;
      }
      break;
    case kDevice:
      name(device_name(d.device));
      break;
    case kPath:
      name(ev.path);
      break;
    case kTid:
      num(static_cast<uint32_t>(ev.tid));
      break;
    case kPid:
      num(static_cast<uint32_t>(ev.pid));
      break;
    case kSeq:
      num(ev.seq);
      break;
    case kFd:
      if (ev.fd >= 0) num(static_cast<uint64_t>(ev.fd));
      break;
    case kT:
      num(ev.t_ns);
      break;
    case kDur:
      if (ev.has_duration) num(ev.dur_ns);
      break;
    case kClient:
      g = got_number(d.h_client);
      break;
    case kParent:
      g = got_number(d.h_parent);
      break;
    case kObject:
      g = got_number(d.h_object);
      break;
    case kRequest:
      if (ev.sys == Sys::kIoctl) num(ev.request);
      break;
    case kRet:
      num(static_cast<uint64_t>(ev.ret));
      break;
    case kOp:
      name(ev.op);
      break;
    case kHandle:
      break;  // several values: see eval
    case kApi:
      name(api);
      break;
  }
  return g;
}

bool value_matches(EventFilter::Node::Op op, bool is_signed, const EventFilter::Value& v,
                   const Got& g) {
  if (v.is_number) return g.has_number && compare(op, is_signed, g.number, v.number);
  return !g.name.empty() && glob_match(v.pattern, g.name, /*fold_case=*/true);
}

// Does any value of the node match (= for kNe, which negates the answer)?
bool any_value(const EventFilter::Node& n, const Got& g) {
  auto op = n.op == EventFilter::Node::kNe ? EventFilter::Node::kEq : n.op;
  for (const EventFilter::Value& v : n.values) {
    if (value_matches(op, n.field == kRet, v, g)) return true;
  }
  return false;
}

}  // namespace

std::string_view EventFilter::field_list() {
  return kFieldList;
}
std::string_view EventFilter::flag_list() {
  return kFlagList;
}

bool EventFilter::matches(const Event& ev, const Decoded& d) const {
  return matches(ev, d, {});
}

bool EventFilter::matches(const Event& ev, const Decoded& d, std::string_view api) const {
  return root_ < 0 || eval(root_, ev, d, api);
}

bool EventFilter::eval(int i, const Event& ev, const Decoded& d, std::string_view api) const {
  const Node& n = nodes_[static_cast<size_t>(i)];
  switch (n.kind) {
    case Node::kAnd:
      return eval(n.a, ev, d, api) && eval(n.b, ev, d, api);
    case Node::kOr:
      return eval(n.a, ev, d, api) || eval(n.b, ev, d, api);
    case Node::kNot:
      return !eval(n.a, ev, d, api);
    case Node::kFlag:
      switch (n.field) {
        case kFailed:
          return ev.err != 0 || (d.status && *d.status != 0);
        case kUnknown:
          return !d.known;
        case kNotes:
          return !d.notes.empty();
        case kPartial:
          return !d.partial.empty();
        default:
          return false;
      }
    case Node::kCompare:
      break;
  }
  // A comparison is false when the event lacks the field, for = and != alike.
  if (n.field == kHandle) {
    bool present = false, hit = false;
    for (const auto& h : {d.h_client, d.h_parent, d.h_object}) {
      Got g = got_number(h);
      present |= g.present;
      hit = hit || (g.present && any_value(n, g));
    }
    return present && (n.op == Node::kNe ? !hit : hit);
  }
  Got g = got_of(static_cast<FieldId>(n.field), *tables_, ev, d, api);
  if (!g.present) return false;
  if (n.op == Node::kNe) return !any_value(n, g);
  return any_value(n, g);
}

}  // namespace cudatool::trace
