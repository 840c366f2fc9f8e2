// Counting, the RM object tree and milestones of a trace (trace_stats.hpp).
//
// RM object model (src/nvidia/src/libraries/resserv, rmapi/alloc_free.c): an object is named by
// (hClient, handle); NV_ESC_RM_ALLOC creates hObjectNew under hObjectParent of client hRoot — a
// client itself is allocated with hRoot = hObjectParent = 0 and its handle returned in
// hObjectNew; NV_ESC_RM_FREE (NVOS00) frees hObjectOld and, with it, every object below it
// (freeing the client frees all of the client's objects).
#include "trace/trace_stats.hpp"

#include <fmt/format.h>

#include "trace/decode_env.hpp"

#include <algorithm>
#include <array>

namespace cudatool::trace {

using rm::CategoryEntry;
using rm::ClassEntry;
using rm::CtrlEntry;
using rm::Field;
using rm::StatusEntry;
using rm::Tables;
namespace {

// Milestones on the way to a usable GPU context, by RM's implementation class of the object
// (resource_list.h). A channel (KernelChannel: the *_CHANNEL_GPFIFO_* classes) is what work is
// submitted to: its first allocation is the "first context".
struct MilestoneDef {
  std::string_view what;
  std::string_view rm_class;
};
constexpr std::array kMilestones{
    MilestoneDef{"client", "RmClientResource"},
    MilestoneDef{"device", "Device"},
    MilestoneDef{"subdevice", "Subdevice"},
    MilestoneDef{"virtual address space", "VaSpaceApi"},
    MilestoneDef{"channel group", "KernelChannelGroupApi"},
    MilestoneDef{"context share", "KernelCtxShareApi"},
    MilestoneDef{"channel", "KernelChannel"},
};
constexpr std::string_view kFirstContext = "channel";

uint64_t key_of(uint32_t client, uint32_t handle) {
  return (uint64_t{client} << 32) | handle;
}

bool by_count(const CountRow& a, const CountRow& b) {
  if (a.count != b.count) return a.count > b.count;
  if (a.name != b.name) return a.name < b.name;
  return a.key < b.key;
}

std::string hex_name(uint64_t v) {
  return fmt::format("{:#x}?", v);
}

bool slower(const SlowCall& a, const SlowCall& b) {  // heap order: the fastest on top
  if (a.dur_ns != b.dur_ns) return a.dur_ns > b.dur_ns;
  return a.seq < b.seq;
}

}  // namespace

const Milestone* TraceStats::first_context() const {
  for (const Milestone& m : milestones) {
    if (m.what == kFirstContext && m.found) return &m;
  }
  return nullptr;
}

void StatsBuilder::Counter::add(bool failed_call, uint64_t dur) {
  ++count;
  if (failed_call) ++failed;
  dur_total += dur;
  dur_max = std::max(dur_max, dur);
}

StatsBuilder::StatsBuilder(const Tables& tables, size_t slowest)
    : t_(tables), max_slowest_(slowest) {
  for (const MilestoneDef& m : kMilestones) {
    Milestone x;
    x.what = m.what;
    x.rm_class = m.rm_class;
    s_.milestones.push_back(x);
  }
}

void StatsBuilder::add(const Event& ev, const Decoded& d) {
  uint64_t t_end = ev.t_ns + (ev.has_duration ? ev.dur_ns : 0);
  if (!any_) {
    s_.first_t_ns = ev.t_ns;
    any_ = true;
  }
  s_.first_t_ns = std::min(s_.first_t_ns, ev.t_ns);
  s_.last_t_ns = std::max(s_.last_t_ns, t_end);
  ++s_.events;
  if (ev.has_duration) ++s_.with_duration;
  bool status_failed = d.status && *d.status != 0;
  bool failed = ev.err != 0 || status_failed;
  if (failed) ++s_.failed;
  uint64_t dur = ev.has_duration ? ev.dur_ns : 0;

  bool env = is_environment(ev.sys);
  if (env) {
    ++s_.env_events;
    std::string key(sys_name(ev.sys));
    key += ' ';
    key += ev.path;
    env_paths_[key].add(failed, dur);
    env_ops_[ev.op].add(failed, dur);
  }
  if (!ev.path.empty() && !env) {
    if (last_device_ == nullptr || ev.path != last_path_) {
      last_path_ = ev.path;
      last_device_ = &devices_[ev.path];
    }
    last_device_->add(failed, dur);
  }
  if (ev.sys == Sys::kIoctl) ++s_.ioctls;
  if (!d.call.empty()) {
    calls_[d.call].add(failed, dur);
  } else if (ev.sys == Sys::kIoctl) {
    unknown_requests_[ev.request].add(failed, dur);
  } else {
    calls_[sys_name(ev.sys)].add(failed, dur);
  }
  threads_[ev.tid].add(failed, dur);
  if (d.cmd) controls_[*d.cmd].add(failed, dur);
  if (status_failed) statuses_[*d.status].add(true, dur);
  if (ev.err != 0) errnos_[static_cast<uint32_t>(ev.err)].add(true, dur);

  bool ok = d.status && *d.status == 0 && ev.err == 0;
  if (d.call == "NV_ESC_RM_ALLOC" || d.call == "NV_ESC_RM_ALLOC_MEMORY" ||
      d.call == "NV_ESC_RM_DUP_OBJECT") {
    if (d.h_class) classes_[*d.h_class].add(failed, dur);
    if (ok) alloc(ev, d, t_end);
  } else if (d.call == "NV_ESC_RM_FREE" && ok) {
    release(d, ev.seq, t_end);
  }
  if (ev.has_duration && max_slowest_ > 0) slow(ev, d);
}

void StatsBuilder::alloc(const Event& ev, const Decoded& d, uint64_t t_end) {
  if (!d.h_object) return;
  uint32_t client = d.h_client.value_or(0);
  uint32_t parent = d.h_parent.value_or(0);
  std::optional<uint32_t> cls = d.h_class;
  const ClassEntry* ce = cls ? t_.find_class(*cls) : nullptr;
  bool is_client = client == 0 && parent == 0;  // hRoot = hObjectParent = 0: a new client
  if (is_client) client = *d.h_object;
  if (d.call == "NV_ESC_RM_DUP_OBJECT") {
    // NVOS55: hClient/hParent/hObject is the new name of (hClientSrc, hObjectSrc).
    cls.reset();
    ce = nullptr;
    uint32_t src_client = 0, src_object = 0;
    for (const Field& f : d.args) {
      if (f.name == "hClientSrc") src_client = static_cast<uint32_t>(f.value);
      if (f.name == "hObjectSrc") src_object = static_cast<uint32_t>(f.value);
    }
    if (auto it = live_.find(key_of(src_client, src_object)); it != live_.end()) {
      cls = s_.objects[it->second].cls;
      if (cls) ce = t_.find_class(*cls);
    }
  }
  if (s_.objects.size() >= kMaxObjects) {
    ++s_.objects_not_tracked;
    return;
  }
  ObjectInfo o;
  o.client = client;
  o.handle = *d.h_object;
  o.parent = is_client ? 0 : parent;
  o.cls = cls;
  if (ce != nullptr) {
    o.class_name = ce->name;
    o.rm_class = ce->internal;
  }
  o.created_by = d.call;
  o.tid = ev.tid;
  o.alloc_seq = ev.seq;
  o.alloc_t_ns = t_end;
  auto index = static_cast<uint32_t>(s_.objects.size());
  if (is_client) {
    s_.roots.push_back(index);
  } else if (auto p = live_.find(key_of(client, parent)); p != live_.end()) {
    s_.objects[p->second].children.push_back(index);
  } else if (auto c = live_.find(key_of(client, client)); c != live_.end()) {
    o.orphan = true;  // the parent was never allocated in the trace: shown under its client
    s_.objects[c->second].children.push_back(index);
  } else {
    o.orphan = true;
    s_.roots.push_back(index);
  }
  live_[key_of(client, o.handle)] = index;
  if (ce != nullptr) {
    for (Milestone& m : s_.milestones) {
      if (!m.found && m.rm_class == ce->internal) {
        m.found = true;
        m.seq = ev.seq;
        m.t_ns = t_end;
        m.since_first_ns = t_end - std::min(t_end, s_.first_t_ns);
        m.handle = o.handle;
        m.class_name = ce->name;
      }
    }
  }
  s_.objects.push_back(std::move(o));
}

void StatsBuilder::release(const Decoded& d, uint64_t seq, uint64_t t_end) {
  if (!d.h_object) return;
  uint32_t client = d.h_client.value_or(0);
  auto it = live_.find(key_of(client, *d.h_object));
  if (it == live_.end()) {
    ++s_.frees_of_unknown;
    return;
  }
  uint32_t top = it->second;
  std::vector<uint32_t> stack{top};
  while (!stack.empty()) {
    uint32_t i = stack.back();
    stack.pop_back();
    ObjectInfo& o = s_.objects[i];
    if (o.freed) continue;
    o.freed = true;
    o.free_seq = seq;
    o.free_t_ns = t_end;
    if (i != top) o.freed_with = *d.h_object;
    auto l = live_.find(key_of(o.client, o.handle));
    if (l != live_.end() && l->second == i) live_.erase(l);
    for (uint32_t c : o.children) stack.push_back(c);
  }
}

void StatsBuilder::slow(const Event& ev, const Decoded& d) {
  auto& heap = s_.slowest;
  SlowCall probe;
  probe.dur_ns = ev.dur_ns;
  probe.seq = ev.seq;
  if (heap.size() >= max_slowest_ && !slower(probe, heap.front())) return;
  SlowCall c;
  c.seq = ev.seq;
  c.t_ns = ev.t_ns;
  c.dur_ns = ev.dur_ns;
  c.tid = ev.tid;
  c.call = d.call.empty() ? fmt::format("ioctl {:#x}?", ev.request) : std::string(d.call);
  if (d.cmd) {
    const CtrlEntry* e = t_.find_control(*d.cmd);
    c.call += " " + (e ? std::string(e->name) : fmt::format("{:#x}?", *d.cmd));
  } else if (d.h_class && d.call != "NV_ESC_RM_FREE") {
    const ClassEntry* e = t_.find_class(*d.h_class);
    c.call += " " + (e ? std::string(e->name) : fmt::format("{:#x}?", *d.h_class));
  }
  if (heap.size() >= max_slowest_) {
    std::pop_heap(heap.begin(), heap.end(), slower);
    heap.pop_back();
  }
  heap.push_back(std::move(c));
  std::push_heap(heap.begin(), heap.end(), slower);
}

TraceStats StatsBuilder::finish() {
  auto rows = [](auto& map, auto name_of) {
    std::vector<CountRow> out;
    out.reserve(map.size());
    for (const auto& [k, c] : map) {
      CountRow r;
      name_of(r, k);
      r.count = c.count;
      r.failed = c.failed;
      r.dur_total_ns = c.dur_total;
      r.dur_max_ns = c.dur_max;
      out.push_back(std::move(r));
    }
    std::sort(out.begin(), out.end(), by_count);
    return out;
  };
  s_.by_device = rows(devices_, [](CountRow& r, const std::string& k) { r.name = k; });
  s_.by_call = rows(calls_, [](CountRow& r, std::string_view k) { r.name = std::string(k); });
  for (CountRow& r : rows(unknown_requests_, [](CountRow&r, uint64_t k) {
         r.key = k;
         r.name = fmt::format("ioctl {:#x}?", k);
       })) {
    s_.by_call.push_back(std::move(r));
  }
  std::sort(s_.by_call.begin(), s_.by_call.end(), by_count);
  s_.by_control = rows(controls_, [this](CountRow& r, uint32_t k) {
    r.key = k;
    if (const CtrlEntry* e = t_.find_control(k)) {
      r.name = e->name;
    } else if (const CategoryEntry* g = t_.find_category(k)) {
      r.name = fmt::format("{:#010x}? ({})", k, g->name);
    } else {
      r.name = hex_name(k);
    }
  });
  s_.by_class = rows(classes_, [this](CountRow& r, uint32_t k) {
    r.key = k;
    const ClassEntry* e = t_.find_class(k);
    r.name = e ? std::string(e->name) : hex_name(k);
  });
  s_.by_thread = rows(threads_, [](CountRow& r, int32_t k) {
    r.key = static_cast<uint32_t>(k);
    r.name = std::to_string(k);
  });
  s_.failures_by_status = rows(statuses_, [this](CountRow& r, uint32_t k) {
    r.key = k;
    const StatusEntry* e = t_.find_status(k);
    r.name = e ? std::string(e->name) : hex_name(k);
  });
  s_.failures_by_errno = rows(errnos_, [](CountRow& r, uint32_t k) {
    r.key = k;
    const char* n = strerrorname_np(static_cast<int>(k));
    r.name = n != nullptr ? n : std::to_string(k);
  });
  s_.by_env_path = rows(env_paths_, [](CountRow& r, const std::string& k) { r.name = k; });
  s_.by_env_op = rows(env_ops_, [](CountRow& r, const std::string& k) { r.name = k; });
  for (const ObjectInfo& o : s_.objects) {
    if (o.freed) {
      ++s_.objects_freed;
    } else {
      ++s_.objects_never_freed;
    }
  }
  std::sort(s_.slowest.begin(), s_.slowest.end(), [](const SlowCall& a, const SlowCall& b) {
    return a.dur_ns != b.dur_ns ? a.dur_ns > b.dur_ns : a.seq < b.seq;
  });
  return std::move(s_);
}

}  // namespace cudatool::trace
