#include "replay/answers.hpp"

#include <sys/stat.h>

#include <fmt/format.h>
#include <algorithm>
#include <cstring>
#include <map>

#include "base/bytes.hpp"
#include "record/shim_abi/replay_abi.h"
#include "replay/answer_layouts.hpp"
#include "rm/call_semantics.hpp"
#include "rm/nv_ioctl_abi.h"
#include "trace/decode.hpp"
#include "trace/loaded_libcuda.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::replay {

using detail::IoctlView;

namespace {

Error answer_err(std::string structure, std::string reason) {
  return make_error(std::move(structure), "", std::nullopt, std::move(reason));
}

Result<Recording> finish_recording(std::unique_ptr<trace::TraceReader> r, std::string path) {
  Recording rec;
  rec.path = std::move(path);
  rec.header = r->header();
  trace::Event ev;
  while (r->next(ev)) rec.events.push_back(ev);
  rec.trailer = r->trailer();
  rec.diagnostics = r->diagnostics();
  rec.truncated = r->truncated();
  ab::NormalizeOptions options;
  if (auto lib = trace::libcuda_among(r->modules())) options.libcuda_version = lib->version;
  rec.norm = ab::normalize_events(rec.header, rec.events, options);
  rec.tables = rec.norm->tables;
  bool any = std::any_of(rec.events.begin(), rec.events.end(), [](const trace::Event& e) {
    return e.sys == trace::Sys::kIoctl || e.sys == trace::Sys::kOpen ||
           trace::is_environment(e.sys);
  });
  if (!any) {
    return answer_err(rec.path,
                      "the trace holds no device calls or environment events to answer from");
  }
  return rec;
}

rp_sys sys_of(trace::Sys s) {
  switch (s) {
    case trace::Sys::kOpen:
      return RP_OPEN;
    case trace::Sys::kClose:
      return RP_CLOSE;
    case trace::Sys::kDup:
      return RP_DUP;
    case trace::Sys::kIoctl:
      return RP_IOCTL;
    case trace::Sys::kMmap:
      return RP_MMAP;
    case trace::Sys::kMunmap:
      return RP_MUNMAP;
    default:
      return RP_SYS_NONE;
  }
}

// Serialised sections of the table, appended in order.
struct Builder {
  std::vector<rp_event> events;
  std::vector<rp_role> roles;
  std::vector<std::vector<rp_patch>> patches;  // by table index; flattened when written
  std::vector<uint8_t> blob;
  std::string strings = std::string(1, '\0');
  uint32_t cur = 0;  // the event patch() adds to

  uint32_t str(std::string_view s) {
    uint32_t off = static_cast<uint32_t>(strings.size());
    strings.append(s);
    strings.push_back('\0');
    return off;
  }
  void patch(int buf, int parent, uint32_t ptr_off, uint32_t off, const uint8_t* p, uint32_t len,
             uint32_t bufsize = 0) {
    rp_patch x{};
    x.buf = static_cast<uint8_t>(buf);
    x.parent = static_cast<uint8_t>(parent);
    x.ptr_off = ptr_off;
    x.off = off;
    x.len = len;
    x.data = blob.size();
    x.bufsize = bufsize;
    if (len > 0) blob.insert(blob.end(), p, p + len);
    patches[cur].push_back(x);
  }
};

// Runs of bytes the kernel changed: pre vs post over `limit` bytes (post past pre counts as
// changed). Exact runs: a byte the kernel left alone is never written (the program's own input
// may differ from the recording's there).
std::vector<std::pair<uint32_t, uint32_t>> changed_runs(const trace::Buffer& b, uint64_t limit) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  if (b.after.empty()) return runs;
  if (b.before.empty() && !b.before_error.empty()) return runs;  // nothing to compare with
  uint64_t n = std::min<uint64_t>(b.after.size(), limit);
  n = std::min<uint64_t>(n, NVTR_MAX_BUFFER);
  uint64_t i = 0;
  while (i < n) {
    bool diff = i >= b.before.size() || b.before[i] != b.after[i];
    if (!diff) {
      ++i;
      continue;
    }
    uint64_t start = i, last = i;
    while (i < n) {
      bool d = i >= b.before.size() || b.before[i] != b.after[i];
      if (!d) break;
      last = i;
      ++i;
    }
    runs.emplace_back(static_cast<uint32_t>(start), static_cast<uint32_t>(last + 1 - start));
  }
  return runs;
}

// Where the pointer to `addr` sits in a recorded buffer (8-aligned), -1 when nowhere.
int64_t find_pointer(const trace::Buffer& parent, uint64_t addr) {
  const std::vector<uint8_t>& b = parent.before.empty() ? parent.after : parent.before;
  for (uint64_t off = 0; off + 8 <= b.size(); off += 8) {
    if (load_le<uint64_t>(b.data() + off) == addr) return static_cast<int64_t>(off);
  }
  return -1;
}

const trace::Buffer* nested_role(const trace::Event& ev, std::string_view role) {
  for (const trace::Buffer& b : ev.nested) {
    if (b.role == role) return &b;
  }
  return nullptr;
}

struct Ctx {
  const Recording& rec;
  const rm::Tables& t;
  std::vector<rp_escape> escapes;
  std::vector<rp_uvm> uvms;
  Builder b;
  AnswerTable out;
  std::map<std::string, uint32_t> path_index;
  std::vector<IoctlView> views;  // by table index
  // The control that returns the driver's version strings (rm/call_semantics.cpp control rows).
  const rm::CtrlEntry* build_version = nullptr;
  uint64_t gaps_alloc = 0, gaps_members = 0;
};

uint32_t path_of(Ctx& c, const std::string& p) {
  auto [it, inserted] = c.path_index.try_emplace(p, static_cast<uint32_t>(c.out.paths.size()));
  if (inserted) c.out.paths.push_back(p);
  return it->second;
}

// The parameters of a NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION whose strings the trace lacks
// (v1 traces, captures): without them libcuda sees a version mismatch and cuInit fails with 803.
const trace::Buffer* build_version_without_strings(const Ctx& c, const trace::Event& ev,
                                                   const IoctlView& v) {
  if (c.build_version == nullptr || v.cmd != c.build_version->id) return nullptr;
  if (nested_role(ev, "params.pDriverVersionBuffer")) return nullptr;
  return nested_role(ev, "params");
}

// Those strings, made from the header's driver version.
bool synthesize_build_version(Ctx& c, const trace::Event& ev, const IoctlView& v) {
  if (!c.rec.header.driver_version) return false;
  const trace::Buffer* params = build_version_without_strings(c, ev, v);
  if (params == nullptr) return false;
  const rm::StructEntry* s = c.t.find_struct(c.build_version->params);
  if (s == nullptr) return false;
  const std::vector<uint8_t>& pb = params->before.empty() ? params->after : params->before;
  ByteView pv(pb.data(), pb.size());
  const rm::FieldEntry* size_f = c.t.find_field(*s, "sizeOfStrings");
  uint32_t cap = size_f ? pv.read<uint32_t>(size_f->offset).value_or(0) : 0;
  if (cap == 0) return false;
  cap = std::min<uint32_t>(cap, 256);
  const std::string& ver = *c.rec.header.driver_version;
  bool any = false;
  for (std::string_view member : {"pDriverVersionBuffer", "pVersionBuffer", "pTitleBuffer"}) {
    const rm::FieldEntry* f = c.t.find_field(*s, member);
    if (f == nullptr || pv.read<uint64_t>(f->offset).value_or(0) == 0) continue;
    std::string text = member == "pTitleBuffer" ? "NVIDIA UNIX Kernel Module " + ver : ver;
    text.resize(std::min<size_t>(text.size(), cap - 1));
    text.push_back('\0');
    c.b.patch(RP_BUF_MEMBER, v.xfer ? RP_BUF_XPARAMS : RP_BUF_PARAMS, f->offset, 0,
              reinterpret_cast<const uint8_t*>(text.data()), static_cast<uint32_t>(text.size()),
              cap);
    any = true;
  }
  return any;
}

void add_patches(Ctx& c, const trace::Event& ev, const IoctlView& v, rp_event& e) {
  if (ev.arg) {
    uint64_t limit = ev.arg->after.size();
    if (v.uvm != nullptr && v.uvm->size >= 0) limit = static_cast<uint64_t>(v.uvm->size);
    for (auto [off, len] : changed_runs(*ev.arg, limit)) {
      c.b.patch(RP_BUF_ARG, 0, 0, off, ev.arg->after.data() + off, len);
    }
  }
  for (const trace::Buffer& nb : ev.nested) {
    int buf = detail::buffer_of_role(nb.role, v.xfer);
    if (buf < 0) continue;
    int parent = 0;
    uint32_t ptr_off = 0;
    if (buf == RP_BUF_MEMBER) {
      std::string_view prefix = std::string_view(nb.role).substr(0, nb.role.find('.'));
      parent = detail::buffer_of_role(prefix, v.xfer);
      const trace::Buffer* pb = nested_role(ev, prefix);
      int64_t at = pb ? find_pointer(*pb, nb.addr) : -1;
      if (parent < 0 || parent == RP_BUF_MEMBER || at < 0) {
        ++c.gaps_members;
        continue;
      }
      ptr_off = static_cast<uint32_t>(at);
    }
    uint32_t bufsize = static_cast<uint32_t>(std::min<uint64_t>(nb.size, NVTR_MAX_BUFFER));
    auto runs = changed_runs(nb, nb.after.size());
    if (buf == RP_BUF_MEMBER && runs.empty()) {
      // Still read it into the replayed trace: a patch of no bytes.
      c.b.patch(buf, parent, ptr_off, 0, nullptr, 0, bufsize);
    }
    for (auto [off, len] : runs)
      c.b.patch(buf, parent, ptr_off, off, nb.after.data() + off, len, bufsize);
  }
  constexpr const char* kBuildVersion =
      "seq {} NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION: the build-version strings behind its "
      "pointers{}";
  if (synthesize_build_version(c, ev, v)) {
    e.flags |= RP_EVF_SYNTHESIZED;
    c.out.synthesized.push_back(fmt::format(
        fmt::runtime(kBuildVersion), ev.seq,
        fmt::format(" from the header's driver version {} (the trace does not hold those buffers)",
                    *c.rec.header.driver_version)));
  } else if (!c.rec.header.driver_version && build_version_without_strings(c, ev, v)) {
    c.out.gaps.push_back(fmt::format(
        fmt::runtime(kBuildVersion), ev.seq,
        ", and no driver version in the header to make them from: libcuda sees empty strings "
        "(cuInit then fails with 803, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH); import the capture "
        "with --driver-version"));
  }
  // Allocations whose parameters the recording could not give (capture format: paramsSize 0).
  if (v.esc != nullptr && (v.esc->flags & RP_ESCF_ALLOC) && v.cls != 0) {
    const trace::Buffer* p = nested_role(ev, "params");
    const rm::ClassEntry* ce = c.t.find_class(v.cls);
    if ((p == nullptr || p->size == 0) && ce != nullptr && ce->alloc_params_size > 0) {
      ++c.gaps_alloc;
    }
  }
}

std::string status_name(const rm::Tables& t, uint32_t v) {
  const rm::StatusEntry* s = t.find_status(v);
  return s ? std::string(s->name) : fmt::format("0x{:x}", v);
}

// The recorded call an injection names (its index in the table's events), or why none.
Result<uint32_t> injected_event(Ctx& c, const Injection& inj,
                                const std::vector<uint32_t>& by_trace) {
  auto fail = [&](std::string why) {
    return answer_err(fmt::format("inject '{}'", inj.text), std::move(why));
  };
  std::optional<uint32_t> cmd, cls;
  if (!inj.cmd.empty()) {
    if (auto n = parse_number(inj.cmd)) {
      cmd = static_cast<uint32_t>(*n);
    } else {
      for (const rm::CtrlEntry& e : c.t.controls()) {
        if (e.name == inj.cmd) cmd = e.id;
      }
    }
    if (!cmd)
      return fail(fmt::format("no control command {} in the tables of {}", inj.cmd, c.t.info().id));
  }
  if (!inj.cls.empty()) {
    if (auto n = parse_number(inj.cls)) {
      cls = static_cast<uint32_t>(*n);
    } else {
      for (const rm::ClassEntry& e : c.t.classes()) {
        if (e.name == inj.cls) cls = e.id;
      }
    }
    if (!cls) return fail(fmt::format("no class {} in the tables of {}", inj.cls, c.t.info().id));
  }
  uint32_t seen = 0;
  for (uint32_t k : by_trace) {
    const rp_event& e = c.b.events[k];
    const trace::Event& ev = c.rec.events[e.index];
    bool m = false;
    if (inj.seq) {
      m = ev.seq == *inj.seq;
    } else if (cmd) {
      m = (e.flags & RP_EVF_CONTROL) && e.id.cmd == *cmd;
    } else if (cls) {
      m = c.views[k].esc && (c.views[k].esc->flags & RP_ESCF_ALLOC) && e.id.cls == *cls;
    } else {
      m = c.rec.norm->events[e.index].call == inj.call ||
          (ev.sys != trace::Sys::kIoctl && trace::sys_name(ev.sys) == inj.call);
    }
    if (m && ++seen == (inj.seq ? 1u : inj.nth)) return k;
  }
  if (inj.seq) return fail(fmt::format("the recording has no device call with seq {}", *inj.seq));
  return fail(
      fmt::format("the recording has {} such call{}, not {}", seen, seen == 1 ? "" : "s", inj.nth));
}

// status=: the call's NV_STATUS member set. Returns what changed.
Result<std::string> inject_status(Ctx& c, const Injection& inj, uint32_t k,
                                  const std::string& what) {
  auto fail = [&](std::string why) {
    return answer_err(fmt::format("inject '{}'", inj.text), std::move(why));
  };
  const trace::Event& ev = c.rec.events[c.b.events[k].index];
  const IoctlView& v = c.views[k];
  if (v.status_buf < 0) return fail(fmt::format("{}: the call has no NV_STATUS member", what));
  std::optional<uint32_t> st;
  if (auto n = parse_number(inj.status); n && *n <= 0xffffffffu) st = static_cast<uint32_t>(*n);
  for (const rm::StatusEntry& s : c.t.statuses()) {
    if (s.name == inj.status) st = s.value;
  }
  if (!st) return fail(fmt::format("no status {} in the tables of {}", inj.status, c.t.info().id));
  const trace::Buffer* b =
      v.status_buf == RP_BUF_XFER ? nested_role(ev, "xfer") : (ev.arg ? &*ev.arg : nullptr);
  uint32_t old = 0;
  if (b != nullptr) {
    old = ByteView(b->after.data(), b->after.size())
              .read<uint32_t>(static_cast<uint64_t>(v.status_off))
              .value_or(0);
  }
  uint8_t bytes[4];
  store_le<uint32_t>(bytes, *st);
  c.b.patch(v.status_buf, 0, 0, static_cast<uint32_t>(v.status_off), bytes, 4);
  return fmt::format("status {} -> {}", status_name(c.t, old), status_name(c.t, *st));
}

// member=PATH,value=V: one member of the answer set. Returns what changed.
Result<std::string> inject_member(Ctx& c, const Injection& inj, uint32_t k,
                                  const std::string& what) {
  auto fail = [&](std::string why) {
    return answer_err(fmt::format("inject '{}'", inj.text), std::move(why));
  };
  const trace::Event& ev = c.rec.events[c.b.events[k].index];
  const IoctlView& v = c.views[k];
  auto place = detail::resolve_member(c.t, ev, v, inj.member);
  if (!place) return fail(place.error().message());
  // The bytes must lie in what the recording holds of that buffer (the shim writes nothing past
  // it) and the value must fit the member: else the change would not be the one said.
  const trace::Buffer* held =
      place->role == "arg" ? (ev.arg ? &*ev.arg : nullptr) : nested_role(ev, place->role);
  uint64_t held_size = held == nullptr ? 0 : std::max(held->before.size(), held->after.size());
  if (uint64_t{place->offset} + place->width > held_size) {
    return fail(fmt::format(
        "{}: member '{}' is bytes {:#x}..{:#x} of {}, and the recording "
        "holds {} bytes of it",
        what, inj.member, place->offset, place->offset + place->width, place->role, held_size));
  }
  if (place->width < 8 && (*inj.value >> (8 * place->width)) != 0) {
    return fail(fmt::format("{}: value {:#x} does not fit member '{}' ({} bytes)", what, *inj.value,
                            inj.member, place->width));
  }
  uint8_t bytes[8];
  store_le<uint64_t>(bytes, *inj.value);
  if (place->buf == RP_BUF_MEMBER) {
    const trace::Buffer* nb = nested_role(ev, place->role);
    std::string_view prefix = std::string_view(place->role).substr(0, place->role.find('.'));
    const trace::Buffer* pb = nested_role(ev, prefix);
    int64_t at = nb && pb ? find_pointer(*pb, nb->addr) : -1;
    if (at < 0) return fail(fmt::format("{}: its pointer is not in {}", place->role, prefix));
    c.b.patch(RP_BUF_MEMBER, detail::buffer_of_role(prefix, v.xfer), static_cast<uint32_t>(at),
              place->offset, bytes, place->width,
              static_cast<uint32_t>(std::min<uint64_t>(nb->size, NVTR_MAX_BUFFER)));
  } else {
    c.b.patch(place->buf, 0, 0, place->offset, bytes, place->width);
  }
  return fmt::format("{} = 0x{:x}", inj.member, *inj.value);
}

// Applies the injections (inject.hpp's grammar) to the events of the table.
Status apply_injections(Ctx& c, const std::vector<Injection>& injections) {
  std::vector<uint32_t> by_trace(c.b.events.size());
  for (uint32_t k = 0; k < by_trace.size(); ++k) by_trace[k] = k;
  std::sort(by_trace.begin(), by_trace.end(),
            [&](uint32_t a, uint32_t b) { return c.b.events[a].index < c.b.events[b].index; });
  for (const Injection& inj : injections) {
    auto found = injected_event(c, inj, by_trace);
    if (!found) return found.error();
    uint32_t k = *found;
    rp_event& e = c.b.events[k];
    const trace::Event& ev = c.rec.events[e.index];
    c.b.cur = k;
    std::string what = fmt::format("seq {} {}", ev.seq, describe_event(c.rec, e.index));
    Result<std::string> change = std::string();
    if (!inj.status.empty()) {
      change = inject_status(c, inj, k, what);
    } else if (!inj.err.empty()) {
      int en = *parse_errno(inj.err);
      e.ret = -1;
      e.err = en;
      c.b.patches[k].clear();  // a failing call copies nothing back
      change = fmt::format("fails with errno {} ({})", en, inj.err);
    } else if (inj.ret) {
      e.ret = *inj.ret;
      e.err = 0;
      change = fmt::format("returns {}", *inj.ret);
    } else {
      change = inject_member(c, inj, k, what);
    }
    if (!change) return change.error();
    e.flags |= RP_EVF_INJECTED;
    c.out.injected.push_back(fmt::format("{}: {}", what, *change));
  }
  return Status::success();
}

}  // namespace

Result<Recording> load_recording(const std::string& path) {
  auto r = trace::TraceReader::open(path);
  if (!r) return r.error();
  return finish_recording(std::move(*r), path);
}

Result<Recording> recording_from_memory(std::string bytes, std::string name) {
  auto r = trace::TraceReader::from_memory(std::move(bytes), name);
  if (!r) return r.error();
  return finish_recording(std::move(*r), std::move(name));
}

CallText describe(const Recording& rec, const trace::Event& ev) {
  trace::Decoded d = trace::decode_event(*rec.tables, ev);
  CallText t;
  t.line = trace::format_line(d);
  if (t.line.size() > 160) t.line = t.line.substr(0, 157) + "...";
  t.name = d.call.empty() ? std::string(trace::sys_name(ev.sys)) : std::string(d.call);
  if (d.cmd) {
    const rm::CtrlEntry* e = rec.tables->find_control(*d.cmd);
    t.name += e != nullptr ? " " + std::string(e->name) : fmt::format(" cmd=0x{:x}", *d.cmd);
  } else if (d.h_class) {
    const rm::ClassEntry* e = rec.tables->find_class(*d.h_class);
    t.name += e != nullptr ? " " + std::string(e->name) : fmt::format(" class=0x{:x}", *d.h_class);
  }
  return t;
}

std::string describe_event(const Recording& rec, uint32_t trace_index) {
  if (trace_index >= rec.events.size()) return "?";
  return describe(rec, rec.events[trace_index]).line;
}

namespace {

// One recorded device call into the table: its identity, flags, patches (the override's when
// `ov` is not null), and its row of c.out.calls.
void add_device_event(Ctx& c, uint32_t i, const AnswerOverride* ov) {
  const trace::Event& ev = c.rec.events[i];
  const ab::NormEvent& ne = c.rec.norm->events[i];
  uint32_t role = ne.thread;
  while (c.b.roles.size() <= role) {
    rp_role r{};
    r.first = static_cast<uint32_t>(c.b.events.size());
    c.b.roles.push_back(r);
  }
  rp_role& rr = c.b.roles[role];
  if (rr.count == 0) {
    rr.first = static_cast<uint32_t>(c.b.events.size());
    rr.tid = ev.tid;
    rr.pid = ev.pid;
  }
  ++rr.count;
  rp_event e{};
  e.id.sys = sys_of(ev.sys);
  e.id.path = path_of(c, ev.path);
  e.seq = ev.seq;
  e.ret = ev.ret;
  e.err = ev.err;
  e.role = role;
  e.index = i;
  IoctlView v;
  c.b.patches.emplace_back();
  c.b.cur = static_cast<uint32_t>(c.b.events.size());
  if (ov != nullptr) {
    // The other recording's answer: its return, errno and the bytes its kernel changed.
    const trace::Event& with = *ov->with;
    e.ret = with.ret;
    e.err = with.err;
    e.flags |= RP_EVF_INJECTED;
    if (with.sys == trace::Sys::kIoctl && ev.sys == trace::Sys::kIoctl) {
      IoctlView wv = detail::view_ioctl(with, c.escapes, c.uvms);
      add_patches(c, with, wv, e);
    }
    c.out.injected.push_back(
        fmt::format("seq {} {}: {}", ev.seq, describe_event(c.rec, i), ov->label));
  }
  if (ev.sys == trace::Sys::kIoctl) {
    v = detail::view_ioctl(ev, c.escapes, c.uvms);
    e.id.req = static_cast<uint32_t>(ev.request);
    e.id.nr = v.nr;
    e.id.cmd = v.cmd;
    e.id.cls = v.cls;
    e.id.h_client = v.h_client;
    e.id.h_obj = v.h_obj;
    e.h_new = v.h_new;
    if (v.esc != nullptr) {
      if (v.esc->flags & RP_ESCF_CREATES) e.flags |= RP_EVF_CREATES;
      if (v.esc->flags & RP_ESCF_FREES) e.flags |= RP_EVF_FREES;
      if (v.esc->flags & RP_ESCF_CONTROL) e.flags |= RP_EVF_CONTROL;
    }
    if (ov == nullptr) add_patches(c, ev, v, e);
    // The inputs the shim compares when threads race to calls of one identity.
    const trace::Buffer* in = nested_role(ev, "params");
    if (in != nullptr && !in->before.empty()) {
      e.in_digest = rp_input_digest(in->before.data(), in->before.size());
    } else if (in == nullptr && ev.arg && !ev.arg->before.empty() &&
               nvtr_dev_kind_of_path(ev.path.c_str()) == NVTR_DEV_UVM) {
      e.in_digest = rp_input_digest(ev.arg->before.data(), ev.arg->before.size());
    }
  }
  c.views.push_back(v);
  c.b.events.push_back(e);
  TableCall tc;
  tc.trace_index = i;
  tc.seq = ev.seq;
  tc.role = role;
  tc.synthesized = (e.flags & RP_EVF_SYNTHESIZED) != 0;
  c.out.calls.push_back(std::move(tc));
}

// Device events, by thread role (ab's roles), in trace order within a role.
void add_device_events(Ctx& c, const std::map<uint32_t, const AnswerOverride*>& overrides) {
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < c.rec.events.size(); ++i) {
    const trace::Event& ev = c.rec.events[i];
    if (sys_of(ev.sys) == RP_SYS_NONE || ev.path.empty()) continue;
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return c.rec.norm->events[a].thread < c.rec.norm->events[b].thread;
  });
  for (uint32_t i : order) {
    auto ov = overrides.find(i);
    add_device_event(c, i, ov == overrides.end() ? nullptr : ov->second);
  }
}

// What the recording lacks that the answers would need, one line each.
void note_gaps(Ctx& c) {
  if (c.gaps_alloc > 0) {
    c.out.gaps.push_back(fmt::format(
        "{} allocations without their parameters (recorded with paramsSize 0: RM sizes them by "
        "the class): answered without the outputs RM writes into them",
        c.gaps_alloc));
  }
  if (c.gaps_members > 0) {
    c.out.gaps.push_back(fmt::format(
        "{} buffers behind pointer members whose pointer is not in their parent buffer: not "
        "answered",
        c.gaps_members));
  }
}

// The identity index: buckets of one (role, identity) each, open addressing, load <= 1/2;
// `lists` holds each bucket's events.
std::vector<rp_bucket> identity_index(const Ctx& c, std::vector<uint32_t>& lists) {
  std::map<std::pair<uint64_t, uint32_t>, std::vector<uint32_t>> groups;
  for (uint32_t k = 0; k < c.b.events.size(); ++k) {
    const rp_event& e = c.b.events[k];
    uint64_t h = rp_ident_hash(&e.id, e.role);
    if (h == 0) h = 1;
    groups[{h, e.role}].push_back(k);
  }
  // Identities that collide in the hash but differ: split (compared by the shim).
  std::vector<rp_bucket> items;
  for (auto& [key, ks] : groups) {
    std::vector<std::vector<uint32_t>> split;
    for (uint32_t k : ks) {
      bool placed = false;
      for (auto& s : split) {
        if (rp_ident_eq(&c.b.events[s[0]].id, &c.b.events[k].id)) {
          s.push_back(k);
          placed = true;
          break;
        }
      }
      if (!placed) split.push_back({k});
    }
    for (auto& s : split) {
      rp_bucket bk{};
      bk.hash = key.first;
      bk.role = key.second;
      bk.list = static_cast<uint32_t>(lists.size());
      bk.count = static_cast<uint32_t>(s.size());
      lists.insert(lists.end(), s.begin(), s.end());
      items.push_back(bk);
    }
  }
  uint32_t nb = 16;
  while (nb < 2 * items.size()) nb *= 2;
  std::vector<rp_bucket> buckets(nb);
  for (const rp_bucket& bk : items) {
    for (uint32_t i = static_cast<uint32_t>(bk.hash) & (nb - 1);; i = (i + 1) & (nb - 1)) {
      if (buckets[i].hash == 0) {
        buckets[i] = bk;
        break;
      }
    }
  }
  return buckets;
}

// The table file: header, then each section 8-byte aligned (record/shim_abi/replay_abi.h).
void write_table(Ctx& c, const TableOptions& options, const std::vector<rp_bucket>& buckets,
                 const std::vector<uint32_t>& lists) {
  const Recording& rec = c.rec;
  const uint32_t nb = static_cast<uint32_t>(buckets.size());
  // Environment: device nodes.
  std::vector<rp_env> env;
  for (const DeviceNode& d : options.devices) {
    rp_env x{};
    x.path = c.b.str(d.path);
    x.flags = RP_ENV_DEVICE;
    x.mode = d.mode;
    x.rdev = d.rdev;
    env.push_back(x);
  }
  std::vector<uint32_t> paths;
  for (const std::string& p : c.out.paths) paths.push_back(c.b.str(p));
  std::vector<rp_class_size> classes = detail::channel_classes(c.t);

  rp_table h{};
  h.magic = RP_TABLE_MAGIC;
  h.version = RP_VERSION;
  // The trace's driver version; for one that names none, the version of the libcuda its module
  // records name (trace/loaded_libcuda.hpp): the library check and the ABI sizes follow it.
  std::string driver = rec.header.driver_version.value_or(
      rec.norm != nullptr ? rec.norm->libcuda_version : std::string());
  h.driver_major = driver.empty() ? 0 : nvtr_driver_major(driver.c_str());
  h.gpu = detail::gpu_layout(c.t);
  h.root = c.b.str(options.root);
  h.env_globs = c.b.str(options.env_globs);
  h.devices = c.b.str(rec.header.devices.empty() ? "/dev/nvidia*" : rec.header.devices);
  h.driver = c.b.str(driver);
  h.channel_class_count = static_cast<uint32_t>(classes.size());
  std::vector<uint8_t>& f = c.out.bytes;
  f.resize(sizeof h);
  auto section = [&](const void* p, size_t n) -> uint64_t {
    while (f.size() % 8) f.push_back(0);
    uint64_t off = f.size();
    const uint8_t* q = static_cast<const uint8_t*>(p);
    f.insert(f.end(), q, q + n);
    return off;
  };
  h.n_events = static_cast<uint32_t>(c.b.events.size());
  h.off_events = section(c.b.events.data(), c.b.events.size() * sizeof(rp_event));
  h.n_roles = static_cast<uint32_t>(c.b.roles.size());
  h.off_roles = section(c.b.roles.data(), c.b.roles.size() * sizeof(rp_role));
  h.n_buckets = nb;
  h.off_buckets = section(buckets.data(), buckets.size() * sizeof(rp_bucket));
  h.n_lists = static_cast<uint32_t>(lists.size());
  h.off_lists = section(lists.data(), lists.size() * sizeof(uint32_t));
  std::vector<rp_patch> flat;
  for (uint32_t k = 0; k < c.b.events.size(); ++k) {
    c.b.events[k].patch_first = static_cast<uint32_t>(flat.size());
    c.b.events[k].patch_count = static_cast<uint32_t>(c.b.patches[k].size());
    flat.insert(flat.end(), c.b.patches[k].begin(), c.b.patches[k].end());
  }
  if (!c.b.events.empty()) {  // (none in a trace of environment events only)
    std::memcpy(f.data() + h.off_events, c.b.events.data(), c.b.events.size() * sizeof(rp_event));
  }
  h.n_patches = static_cast<uint32_t>(flat.size());
  h.off_patches = section(flat.data(), flat.size() * sizeof(rp_patch));
  h.n_escapes = static_cast<uint32_t>(c.escapes.size());
  h.off_escapes = section(c.escapes.data(), c.escapes.size() * sizeof(rp_escape));
  h.n_uvm = static_cast<uint32_t>(c.uvms.size());
  h.off_uvm = section(c.uvms.data(), c.uvms.size() * sizeof(rp_uvm));
  h.n_classes = static_cast<uint32_t>(classes.size());
  h.off_classes = section(classes.data(), classes.size() * sizeof(rp_class_size));
  h.n_env = static_cast<uint32_t>(env.size());
  h.off_env = section(env.data(), env.size() * sizeof(rp_env));
  h.n_paths = static_cast<uint32_t>(paths.size());
  h.off_paths = section(paths.data(), paths.size() * sizeof(uint32_t));
  h.strings_size = c.b.strings.size();
  h.off_strings = section(c.b.strings.data(), c.b.strings.size());
  h.blob_size = c.b.blob.size();
  h.off_blob = section(c.b.blob.data(), c.b.blob.size());
  while (f.size() % 8) f.push_back(0);
  h.size = f.size();
  std::memcpy(f.data(), &h, sizeof h);
  c.out.roles = h.n_roles;
}

}  // namespace

Result<AnswerTable> build_answer_table(const Recording& rec, const TableOptions& options) {
  std::map<uint32_t, const AnswerOverride*> overrides;
  for (const AnswerOverride& o : options.overrides) {
    if (o.with == nullptr || o.trace_index >= rec.events.size()) {
      return answer_err(rec.path, "an answer override names no event");
    }
    overrides[o.trace_index] = &o;
  }
  if (rec.tables == nullptr || rec.norm == nullptr) return answer_err(rec.path, "not normalised");
  Ctx c{rec,
        *rec.tables,
        detail::escape_layouts(*rec.tables),
        detail::uvm_layouts(*rec.tables),
        {},
        {},
        {},
        {},
        0,
        0,
        0};
  c.build_version = rm::control_doing(c.t, rm::kControlDriverVersion);
  add_device_events(c, overrides);
  if (c.b.roles.size() > RP_MAX_ROLES) {
    return answer_err(rec.path,
                      fmt::format("{} threads with device calls; replay follows at most {}",
                                  c.b.roles.size(), RP_MAX_ROLES));
  }
  if (Status s = apply_injections(c, options.injections); !s.ok()) return s.error();
  for (uint32_t k = 0; k < c.out.calls.size(); ++k) {
    c.out.calls[k].injected = (c.b.events[k].flags & RP_EVF_INJECTED) != 0;
  }
  note_gaps(c);
  std::vector<uint32_t> lists;
  std::vector<rp_bucket> buckets = identity_index(c, lists);
  write_table(c, options, buckets, lists);
  return std::move(c.out);
}

}  // namespace cudatool::replay
