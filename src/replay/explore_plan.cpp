// The experiments of `cudatool explore` (explore.hpp): the request kinds of a recording, each
// refused as a proxy refuses it, and the answer members of each kind with boundary values.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "ab/compare.hpp"
#include "replay/answer_layouts.hpp"
#include "replay/explore.hpp"
#include "rm/field.hpp"

namespace cudatool::replay {
namespace {

// One request kind: its key, decoded name and the recorded calls (trace indices) of it.
struct Kind {
  std::string key, request, api;
  std::vector<uint32_t> events;
};

bool is_device_call(const trace::Event& ev) {
  return !ev.path.empty() && (ev.sys == trace::Sys::kIoctl || ev.sys == trace::Sys::kMmap);
}

// Request kinds in order of first appearance: RM controls by command, allocations by class,
// other escapes and UVM calls by name, mmaps by device path.
std::vector<Kind> request_kinds(const Recording& rec) {
  std::vector<Kind> kinds;
  std::map<std::string, size_t> index;
  for (uint32_t i = 0; i < rec.events.size(); ++i) {
    const trace::Event& ev = rec.events[i];
    if (!is_device_call(ev)) continue;
    const ab::NormEvent& ne = rec.norm->events[i];
    std::string key, request;
    if (ev.sys == trace::Sys::kMmap) {
      key = "mmap " + ev.path;
      request = key;
    } else if (ne.cmd) {
      key = fmt::format("control {:#010x}", *ne.cmd);
      std::string_view n = ab::control_name(ne);
      request = fmt::format("{} {}", ne.call, n.empty() ? fmt::format("{:#010x}", *ne.cmd) : n);
    } else if (ne.cls) {
      key = fmt::format("alloc {:#x}", *ne.cls);
      std::string_view n = ab::class_name(ne);
      request = fmt::format("{} {}", ne.call, n.empty() ? fmt::format("{:#x}", *ne.cls) : n);
    } else {
      std::string call =
          ne.call.empty() ? fmt::format("ioctl {:#x}", ev.request) : std::string(ne.call);
      key = "call " + call;
      request = call;
    }
    auto [it, fresh] = index.emplace(key, kinds.size());
    if (fresh) {
      std::string api = ne.api < rec.norm->api_names.size() ? rec.norm->api_names[ne.api] : "";
      kinds.push_back(Kind{key, request, api, {}});
    }
    kinds[it->second].events.push_back(i);
  }
  return kinds;
}

Injection injection(uint64_t seq, std::string_view effect, std::string_view value) {
  Injection in;
  in.seq = seq;
  in.text = fmt::format("seq={},{}={}", seq, effect, value);
  if (effect == "status") in.status = value;
  if (effect == "errno") in.err = value;
  return in;
}

struct Layouts {
  std::vector<rp_escape> escapes;
  std::vector<rp_uvm> uvms;
  explicit Layouts(const rm::Tables& t)
      : escapes(detail::escape_layouts(t)), uvms(detail::uvm_layouts(t)) {}
  [[nodiscard]] detail::IoctlView view(const trace::Event& ev) const {
    return detail::view_ioctl(ev, escapes, uvms);
  }
};

// The buffer of an event a member place lies in (the recorded bytes after the call, else before).
const std::vector<uint8_t>* place_bytes(const trace::Event& ev, const detail::MemberPlace& m) {
  const trace::Buffer* b = nullptr;
  if (m.role == "arg") {
    if (ev.arg) b = &*ev.arg;
  } else {
    for (const trace::Buffer& n : ev.nested) {
      if (n.role == m.role) b = &n;
    }
  }
  if (b == nullptr) return nullptr;
  const std::vector<uint8_t>& v = b->after.empty() ? b->before : b->after;
  return v.size() >= uint64_t{m.offset} + m.width ? &v : nullptr;
}

uint64_t read_le(const std::vector<uint8_t>& v, uint32_t off, uint32_t width) {
  uint64_t x = 0;
  for (uint32_t i = 0; i < width; ++i) x |= uint64_t{v[off + i]} << (8 * i);
  return x;
}

bool changed(const trace::Event& ev, const detail::MemberPlace& m) {
  const trace::Buffer* b = m.role == "arg" && ev.arg ? &*ev.arg : nullptr;
  for (const trace::Buffer& n : ev.nested) {
    if (n.role == m.role) b = &n;
  }
  if (b == nullptr || b->before.size() < uint64_t{m.offset} + m.width ||
      b->after.size() < uint64_t{m.offset} + m.width) {
    return false;
  }
  return read_le(b->before, m.offset, m.width) != read_le(b->after, m.offset, m.width);
}

// How much a member looks like what breaks parsers: counts and sizes first (issue #33).
uint32_t member_priority(std::string_view name, rm::ValueKind kind) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  auto has = [&](std::string_view w) { return n.find(w) != std::string::npos; };
  if (has("count") || has("num") || has("size") || has("len") || has("entries") || has("total")) {
    return 0;
  }
  if (has("index") || has("idx")) return 1;
  if (has("flag") || has("mask") || has("caps")) return 2;
  if (kind == rm::ValueKind::kHandle) return 3;
  return 4;
}

// The structure the answer member paths of a call start from: "params" for controls and
// allocations, "arg" for other escapes and UVM calls.
struct Root {
  std::string name;
  const rm::StructEntry* s = nullptr;
};
Root root_of(const rm::Tables& t, const detail::IoctlView& v) {
  if (v.cmd != 0) {
    const rm::CtrlEntry* c = t.find_control(v.cmd);
    return {"params", c ? t.find_struct(c->params) : nullptr};
  }
  if (v.cls != 0) {
    const rm::ClassEntry* c = t.find_class(v.cls);
    return {"params", c ? t.find_struct(c->alloc_params) : nullptr};
  }
  if (v.uvm != nullptr) {
    const rm::UvmEntry* u = t.find_uvm(v.nr);
    return {"arg", u ? t.find_struct(u->params) : nullptr};
  }
  if (v.esc != nullptr) {
    const rm::EscapeEntry* e = t.find_escape(v.nr);
    return {"arg", e ? t.find_struct(e->type) : nullptr};
  }
  return {};
}

struct Candidate {
  std::string path;
  uint32_t priority = 0;
  uint32_t width = 0;
  uint64_t elements = 0;  // count members: the largest array member's element count (0: none)
};

// The scalar members of a call's root structure (an array's first element), with priorities.
std::vector<Candidate> member_candidates(const rm::Tables& t, const Root& root,
                                         const trace::Event& first, const detail::IoctlView& v) {
  std::vector<Candidate> out;
  uint64_t elements = 0;
  for (const rm::FieldEntry& f : t.fields(*root.s)) {
    if (f.elem_size != 0 && f.size > f.elem_size)
      elements = std::max<uint64_t>(elements, f.size / f.elem_size);
  }
  for (const rm::FieldEntry& f : t.fields(*root.s)) {
    if (f.type == "NvP64" || f.elem_size == 0) continue;
    if (const rm::StructEntry* s = t.find_struct(f.type); s != nullptr && s->size > 0) continue;
    rm::ValueKind kind = rm::member_kind(root.s->name, f);
    if (kind == rm::ValueKind::kStatus || kind == rm::ValueKind::kControl ||
        kind == rm::ValueKind::kClass || kind == rm::ValueKind::kString ||
        kind == rm::ValueKind::kChar) {
      continue;
    }
    std::string path = fmt::format("{}.{}{}", root.name, f.name, f.size > f.elem_size ? "[0]" : "");
    auto place = detail::resolve_member(t, first, v, path);
    if (!place || place_bytes(first, *place) == nullptr) continue;
    Candidate c{path, member_priority(f.name, kind), place->width, 0};
    if (c.priority == 0) c.elements = elements;
    if (!changed(first, *place)) c.priority += 5;  // not written by the kernel in the recording
    out.push_back(std::move(c));
  }
  return out;
}

// Boundary values of a member: 0, 1, the largest (signed) value, one past the element count
// (count members), all ones. `recorded` values are left out: they change nothing.
std::vector<std::pair<std::string, uint64_t>> boundary_values(const Candidate& c,
                                                              uint64_t recorded) {
  uint64_t ones = c.width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * c.width)) - 1;
  std::vector<std::pair<std::string, uint64_t>> v{{"0", 0}, {"1", 1}};
  v.emplace_back("max", ones >> 1);
  if (c.priority % 5 == 0) {
    uint64_t past = c.elements != 0 ? c.elements + 1 : recorded + 1;
    v.emplace_back(c.elements != 0 ? "elements+1" : "recorded+1", past & ones);
  }
  v.emplace_back("all ones", ones);
  std::vector<std::pair<std::string, uint64_t>> out;
  for (auto& candidate : v) {
    const uint64_t x =
        candidate.second;  // not a structured binding: clang's lambdas cannot take one
    bool dup = std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.second == x; });
    if (!dup && x != recorded) out.emplace_back(candidate.first, x);
  }
  return out;
}

}  // namespace

uint64_t request_kind_count(const Recording& rec) {
  return request_kinds(rec).size();
}

std::map<std::string, std::string> request_kind_apis(
    const Recording& rec, const std::function<std::string(const trace::Event&)>& api_of) {
  std::map<std::string, std::string> out;
  for (const Kind& k : request_kinds(rec)) {
    for (uint32_t i : k.events) {
      if (std::string api = api_of(rec.events[i]); !api.empty()) {
        out.emplace(k.key, std::move(api));
        break;
      }
    }
  }
  return out;
}

std::vector<Experiment> refusal_experiments(const Recording& rec) {
  Layouts lay(*rec.tables);
  std::vector<Experiment> out;
  for (const Kind& k : request_kinds(rec)) {
    Experiment e;
    e.strategy = "refuse";
    e.kind = k.key;
    e.request = k.request;
    e.api = k.api;
    e.count = k.events.size();
    std::string effect;
    for (uint32_t i : k.events) {
      const trace::Event& ev = rec.events[i];
      bool status = ev.sys == trace::Sys::kIoctl && lay.view(ev).status_off >= 0;
      e.injections.push_back(status ? injection(ev.seq, "status", "NV_ERR_NOT_SUPPORTED")
                                    : injection(ev.seq, "errno", "EINVAL"));
      if (effect.empty()) effect = status ? "status NV_ERR_NOT_SUPPORTED" : "-1 EINVAL";
    }
    e.value = effect;
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Experiment> mutation_experiments(const Recording& rec) {
  Layouts lay(*rec.tables);
  const rm::Tables& t = *rec.tables;
  std::vector<Experiment> out;
  for (const Kind& k : request_kinds(rec)) {
    const trace::Event& first = rec.events[k.events.front()];
    if (first.sys != trace::Sys::kIoctl) continue;
    detail::IoctlView v = lay.view(first);
    Root root = root_of(t, v);
    if (root.s == nullptr) continue;
    for (const Candidate& c : member_candidates(t, root, first, v)) {
      auto place = detail::resolve_member(t, first, v, c.path);
      uint64_t recorded = read_le(*place_bytes(first, *place), place->offset, place->width);
      for (const auto& [label, value] : boundary_values(c, recorded)) {
        Experiment e;
        e.strategy = "mutate";
        e.kind = k.key;
        e.request = k.request;
        e.member = c.path;
        e.value = fmt::format("{:#x} ({})", value, label);
        e.api = k.api;
        e.priority = c.priority;
        for (uint32_t i : k.events) {
          const trace::Event& ev = rec.events[i];
          auto p = detail::resolve_member(t, ev, lay.view(ev), c.path);
          if (!p || place_bytes(ev, *p) == nullptr) continue;
          uint64_t x = value;
          if (label == "recorded+1") {
            uint64_t ones = p->width >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * p->width)) - 1;
            x = (read_le(*place_bytes(ev, *p), p->offset, p->width) + 1) & ones;
          }
          Injection in;
          in.seq = ev.seq;
          in.member = c.path;
          in.value = x;
          in.text = fmt::format("seq={},member={},value={:#x}", ev.seq, c.path, x);
          e.injections.push_back(std::move(in));
        }
        e.count = e.injections.size();
        out.push_back(std::move(e));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Experiment& a, const Experiment& b) {
    return a.priority < b.priority;
  });
  return out;
}

}  // namespace cudatool::replay
