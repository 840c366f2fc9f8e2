#include "replay/trace_convert.hpp"

#include <sys/utsname.h>

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/hex.hpp"
#include "base/json_writer.hpp"
#include "record/tracee_memory.hpp"
#include "replay/session.hpp"
#include "rm/nv_ioctl_abi.h"
#include "trace/decode.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::replay {
namespace {

trace::Buffer buffer_of(const LogBuffer& b, std::string role) {
  trace::Buffer out;
  out.role = std::move(role);
  out.addr = b.addr;
  out.size = b.size;
  out.before = b.pre;
  out.after = b.post;
  if (b.class_sized) out.sized_by = "class";
  // The recorders' texts (record/tracee_memory.hpp), so that a replayed trace reads as recorded.
  auto error = [&](size_t got) -> std::string {
    if (b.size == 0 || got >= b.size) return {};
    return record::partial_error(EFAULT, got, b.size);
  };
  if (b.bound != 0) {  // as the recorders write a bounded read: the bound, the bytes got
    out.size = b.bound;
    out.bounded = true;
    return out;
  }
  if (b.over != 0) {  // as the recorders write a buffer too large to read
    out.size = b.over;
    out.before_error = out.after_error = record::over_cap_error(b.over, NVTR_MAX_BUFFER);
    return out;
  }
  out.before_error = error(b.pre.size());
  out.after_error = error(b.post.size());
  return out;
}

std::string_view fixed_role(uint16_t r) {
  switch (r) {
    case RP_BUF_ARG:
      return "arg";
    case RP_BUF_PARAMS:
    case RP_BUF_XPARAMS:
      return "params";
    case RP_BUF_RIGHTS:
      return "rights";
    case RP_BUF_XFER:
      return "xfer";
    default:
      return "";
  }
}

// A compute launch the fake GPU completed, as a "launch" record of the replayed trace: not a call
// the program made (its sys is a name trace readers keep as they find it; ab leaves it out of the
// comparison), what the replay report's fake_gpu.launches[] says of it.
trace::Event launch_event(const LaunchRecord& l) {
  const rp_log_launch& x = l.launch;
  trace::Event ev;
  ev.sys = trace::Sys::kUnknown;
  ev.sys_raw = "launch";
  ev.pid = ev.tid = l.pid;
  ev.fd = -1;
  auto field = [&](std::string key, auto&& write) {
    std::string text;
    JsonWriter w(text, false);
    write(w);
    ev.extra.push_back({std::move(key), std::move(text)});
  };
  auto triple = [](const uint32_t(&v)[3]) {
    return [&v](JsonWriter& w) { w.begin_array().value(v[0]).value(v[1]).value(v[2]).end_array(); };
  };
  field("channel", [&](JsonWriter& w) { w.value(fmt::format("0x{:x}", x.channel)); });
  field("class", [&](JsonWriter& w) { w.value(fmt::format("0x{:x}", x.cls)); });
  field("kernel", [&](JsonWriter& w) { l.kernel ? w.value(l.kernel->name) : w.null(); });
  field("program", [&](JsonWriter& w) { w.value(fmt::format("0x{:x}", x.program)); });
  field("grid", triple(x.grid));
  field("block", triple(x.block));
  field("shared_bytes", [&](JsonWriter& w) { w.value(x.shared_bytes); });
  field("params", [&](JsonWriter& w) {
    w.begin_array();
    for (const LaunchParam& p : l.params) w.value(to_hex(ByteView(p.bytes.data(), p.bytes.size())));
    w.end_array();
  });
  field("executed", [&](JsonWriter& w) { w.value(false); });
  return ev;
}

}  // namespace

trace::Event event_of(const LogRecord& r, const AnswerTable& table) {
  trace::Event ev;
  ev.seq = r.seq;
  ev.t_ns = r.t_ns;
  ev.dur_ns = r.dur_ns;
  ev.has_duration = r.sys >= RP_OPEN && r.sys <= RP_MUNMAP;
  ev.pid = r.pid;
  ev.tid = r.tid;
  ev.ret = r.ret;
  ev.err = r.ret == -1 ? r.err : 0;
  ev.fd = r.fd;
  if (r.path >= 0 && static_cast<size_t>(r.path) < table.paths.size()) {
    ev.path = table.paths[static_cast<size_t>(r.path)];
  }
  switch (r.sys) {
    case RP_OPEN:
      ev.sys = trace::Sys::kOpen;
      ev.open_flags = r.flags;
      if (ev.path.empty()) ev.path = r.text;
      ev.fd = -1;
      break;
    case RP_CLOSE:
      ev.sys = trace::Sys::kClose;
      break;
    case RP_DUP:
      ev.sys = trace::Sys::kDup;
      break;
    case RP_MMAP:
      ev.sys = trace::Sys::kMmap;
      ev.addr = r.addr;
      ev.len = r.len;
      ev.prot = r.prot;
      ev.map_flags = r.flags;
      ev.offset = r.off;
      break;
    case RP_MUNMAP:
      ev.sys = trace::Sys::kMunmap;
      ev.addr = r.addr;
      ev.len = r.len;
      ev.fd = -1;
      break;
    case RP_IOCTL: {
      ev.sys = trace::Sys::kIoctl;
      ev.request = r.req;
      // The order the recorders write nested buffers in: xfer, params, rights, then members.
      for (int want : {RP_BUF_XFER, RP_BUF_PARAMS, RP_BUF_XPARAMS, RP_BUF_RIGHTS}) {
        for (const LogBuffer& b : r.bufs) {
          if (b.role == want) ev.nested.push_back(buffer_of(b, std::string(fixed_role(b.role))));
        }
      }
      for (const LogBuffer& b : r.bufs) {
        if (b.role == RP_BUF_ARG) ev.arg = buffer_of(b, "arg");
        if (b.role == RP_BUF_MEMBER) {
          std::string parent(fixed_role(b.parent));
          ev.nested.push_back(buffer_of(b, fmt::format("{}.+0x{:x}", parent, b.ptr_off)));
        }
      }
      if (!ev.arg) {
        trace::Buffer a;
        a.role = "arg";
        ev.arg = a;
      }
      break;
    }
    case RP_LOG_FORK:
      ev.sys = trace::Sys::kFork;
      ev.child_pid = r.child;
      ev.ret = r.child;
      ev.fd = -1;
      break;
    case RP_LOG_EXEC:
      ev.sys = trace::Sys::kExecve;
      ev.path = r.text;
      ev.ret = 0;
      ev.fd = -1;
      break;
    default:
      ev.sys = trace::Sys::kUnknown;
      break;
  }
  return ev;
}

// The recorders' names of the buffers behind the pointer members of the event's "params" buffer
// (for an XFER, the wrapped call's), by the offset of each pointer: the planner (rm/nv_ioctl_abi.h)
// run over the parameters' bytes before the call, as the recorders run it.
static std::vector<std::pair<uint32_t, std::string>> planned_member_roles(const nvtr_rm_branch* rm,
                                                                          const trace::Event& ev) {
  std::vector<std::pair<uint32_t, std::string>> out;
  const trace::Buffer* params = nullptr;
  const trace::Buffer* xfer = nullptr;
  for (const trace::Buffer& b : ev.nested) {
    if (b.role == "params") params = &b;
    if (b.role == "xfer") xfer = &b;
  }
  if (rm == nullptr || !ev.arg || params == nullptr) return out;
  const std::vector<uint8_t>& arg = ev.arg->before;
  nvtr_buf_plan plans[2];
  int n = nvtr_plan_nested(nvtr_dev_kind_of_path(ev.path.c_str()),
                           static_cast<uint32_t>(ev.request), arg.data(), arg.size(), rm, plans);
  if (n > 0 && std::string_view(plans[0].role) == "xfer") {
    n = xfer != nullptr
            ? nvtr_plan_xfer_inner(arg.data(), xfer->before.data(), xfer->before.size(), rm, plans)
            : 0;
  }
  for (int i = 0; i < n; ++i) {
    if (std::string_view(plans[i].role) != "params") continue;
    nvtr_buf_plan q[NVTR_MAX_POINTEES];
    int nq = nvtr_plan_pointees(rm, &plans[i], params->before.data(), params->before.size(), q,
                                NVTR_MAX_POINTEES, nullptr);
    char role[256];
    for (int k = 0; k < nq; ++k) {
      nvtr_role_format(&q[k], role, sizeof role);
      out.emplace_back(q[k].ptr_off, role);
    }
  }
  return out;
}

// The role names of member buffers: as the answering recorded call names the buffer behind the
// pointer at that place, else as the recorders' planner names the member whose pointer is there
// (an array element's index included), else the member of the parameter layout at that offset.
static void name_members(const Recording& rec, const AnswerTable& table, const LogRecord& r,
                         trace::Event& ev) {
  const trace::Event* rec_ev = nullptr;
  if (r.answered >= 0 && static_cast<size_t>(r.answered) < table.calls.size()) {
    rec_ev = &rec.events[table.calls[static_cast<size_t>(r.answered)].trace_index];
  }
  trace::Decoded d = trace::decode_event(*rec.tables, ev);
  // The "params" buffer's structure (for an XFER, the wrapped call's parameters).
  std::string_view params = d.wrapped_struct.empty() ? d.params_struct : d.wrapped_struct;
  const rm::StructEntry* layout = params.empty() ? nullptr : rec.tables->find_struct(params);
  const nvtr_rm_branch* rm = nvtr_rm_branch_for_major(
      rec.header.driver_version ? nvtr_driver_major(rec.header.driver_version->c_str()) : 0);
  const auto planned = planned_member_roles(rm, ev);
  for (trace::Buffer& b : ev.nested) {
    size_t plus = b.role.find(".+0x");
    if (plus == std::string::npos) continue;
    uint64_t ptr_off = std::stoull(b.role.substr(plus + 4), nullptr, 16);
    std::string parent = b.role.substr(0, plus);
    std::string name;
    if (rec_ev != nullptr) {
      const trace::Buffer* pb = nullptr;
      for (const trace::Buffer& x : rec_ev->nested) {
        if (x.role == parent) pb = &x;
      }
      for (const trace::Buffer& x : rec_ev->nested) {
        if (pb == nullptr || x.role.rfind(parent + ".", 0) != 0) continue;
        const std::vector<uint8_t>& pbytes = pb->before.empty() ? pb->after : pb->before;
        if (ptr_off + 8 <= pbytes.size()) {
          uint64_t v = 0;
          std::memcpy(&v, pbytes.data() + ptr_off, 8);
          if (v == x.addr) name = x.role;
        }
      }
    }
    if (name.empty() && parent == "params") {
      for (const auto& [off, role] : planned) {
        if (off == ptr_off) name = role;
      }
    }
    if (name.empty() && layout != nullptr) {
      for (const rm::FieldEntry& f : rec.tables->fields(*layout)) {
        if (f.offset == ptr_off && f.type == "NvP64") name = parent + "." + std::string(f.name);
      }
    }
    if (!name.empty()) b.role = name;
  }
}

Status write_replayed_trace(const Recording& rec, const AnswerTable& table, const ReplayLog& log,
                            const ReplayReport& report, const std::string& path,
                            record::FunctionRecorder* functions, record::FunctionOutcome* fn_out) {
  auto w = trace::TraceWriter::create(path);
  if (!w) return w.error();
  trace::Header h = rec.header;
  h.format_version = trace::kFormatVersion;
  h.mode = "replay";
  h.source = rec.path;
  h.argv = report.argv;
  h.recorder = std::string("cudatool ") + CUDATOOL_VERSION;
  h.stacks = false;
  h.env.clear();
  h.placement.clear();
  h.extra.clear();
  h.functions = functions != nullptr && functions->active() ? functions->outcome().globs : "";
  utsname u{};
  if (uname(&u) == 0) {
    h.host = u.nodename;
    h.kernel = u.release;
  }
  std::time_t now = std::time(nullptr);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  h.start_time = ts;
  if (Status s = (*w)->write_header(h); !s.ok()) return s;
  uint64_t t0 = log.records.empty() ? 0 : log.records.front().t_ns;
  uint64_t seq = 0, last_t = 0;
  int main_pid = 0;
  std::unordered_map<uint64_t, uint64_t> seq_of_log;  // the shims' numbers → the trace's
  auto next_launch = report.launches.begin();
  for (const LogRecord& r : log.records) {
    trace::Event ev;
    if (r.sys == RP_LOG_LAUNCH) {
      while (next_launch != report.launches.end() && next_launch->seq < r.seq) ++next_launch;
      if (next_launch == report.launches.end() || next_launch->seq != r.seq) continue;
      ev = launch_event(*next_launch);
    } else {
      ev = event_of(r, table);
      if (ev.sys == trace::Sys::kUnknown) continue;
      if (main_pid == 0) main_pid = r.pid;
      name_members(rec, table, r, ev);
    }
    seq_of_log[r.seq] = seq;
    ev.seq = seq++;
    ev.t_ns = r.t_ns >= t0 ? r.t_ns - t0 : 0;
    last_t = std::max(last_t, ev.t_ns + ev.dur_ns);
    if (Status s = (*w)->write_event(ev); !s.ok()) return s;
  }
  bool ended = report.end == ReplayEnd::kExit || report.end == ReplayEnd::kSignal;
  if (ended) {
    trace::Event ex;
    ex.seq = seq++;
    ex.t_ns = last_t;
    ex.pid = ex.tid = main_pid;
    ex.sys = trace::Sys::kExit;
    ex.ret = report.exit_status;
    if (Status s = (*w)->write_event(ex); !s.ok()) return s;
  }
  if (functions != nullptr) {
    auto seq_of = [&](uint64_t s) -> std::optional<uint64_t> {
      auto it = seq_of_log.find(s);
      return it == seq_of_log.end() ? std::nullopt : std::optional(it->second);
    };
    record::FunctionOutcome out = functions->write_into(**w, t0, seq_of);
    if (fn_out != nullptr) *fn_out = std::move(out);
  }
  trace::Trailer tr;
  tr.events = seq;
  tr.reason = report.end == ReplayEnd::kDeadline || report.end == ReplayEnd::kTimeLimit ||
                      report.end == ReplayEnd::kStopped
                  ? "interrupted"
              : report.exit_status < 0 ? "signal"
                                       : "exit";
  tr.exit_status = report.exit_status;
  tr.lost = report.log_lost;
  if (report.crash) tr.crash = record::crash_summary(*report.crash);
  if (Status s = (*w)->write_trailer(tr); !s.ok()) return s;
  return (*w)->close();
}

}  // namespace cudatool::replay
