#include "trace/capture_import.hpp"

#include <fmt/format.h>
#include <cmath>

#include "base/hex.hpp"
#include "base/json_reader.hpp"
#include "rm/nv_ioctl_abi.h"
#include "trace/line_source.hpp"
#include "trace/trace_json.hpp"

namespace cudatool::trace {
namespace {

// A capture value that is a number or a string holding one ("0x…" hex, or decimal).
bool read_num(JsonReader& r, int64_t& out, const char*& why) {
  if (r.peek() == JsonReader::Kind::kString) {
    std::string_view s;
    if (!r.string(s)) return false;
    bool neg = !s.empty() && s[0] == '-';
    auto v = parse_u64(neg ? s.substr(1) : s, true);
    if (!v) {
      why = "expected a number or a \"0x…\" string";
      return false;
    }
    out = neg ? -static_cast<int64_t>(*v) : static_cast<int64_t>(*v);
    return true;
  }
  if (r.peek() == JsonReader::Kind::kNumber) {
    // Numbers above INT64_MAX (an address written as a number) wrap like the kernel's.
    JsonReader probe = r;
    uint64_t u = 0;
    if (probe.u64(u)) {
      r = probe;
      out = static_cast<int64_t>(u);
      return true;
    }
  }
  return r.i64(out);
}

bool read_hex(JsonReader& r, std::vector<uint8_t>& out, const char*& why) {
  std::string_view s;
  if (!r.string(s)) return false;
  auto b = parse_hex_bytes(s);
  if (!b) {
    why = "expected hex digits in pairs";
    return false;
  }
  out = std::move(*b);
  return true;
}

// Members of a trace event: a capture field the importer does not know but that has one of these
// names is kept as "capture.<name>", so that the line keeps one member per name.
bool is_trace_member(std::string_view k) {
  return is_event_member(k) || k.substr(0, 8) == "capture.";
}

// A raw syscall result: -4095..-1 is -errno.
void set_result(Event& ev, int64_t raw) {
  if (raw < 0 && raw >= -4095) {
    ev.ret = -1;
    ev.err = static_cast<int32_t>(-raw);
  } else {
    ev.ret = raw;
    ev.err = 0;
  }
}

}  // namespace

Status parse_capture_line(std::string_view line, uint64_t offset, Event& ev) {
  ev = Event{};
  JsonReader r(line, offset);
  const char* why = nullptr;
  std::string field;
  bool have_sys = false, have_nested = false;
  int64_t ret_raw = 0;
  bool have_ret = false;
  Buffer arg, nested;
  bool have_arg = false;
  if (r.enter_object()) {
    std::string_view k;
    while (why == nullptr && r.next_member(k)) {
      field.assign(k);
      int64_t n = 0;
      bool ok = true;
      if (k == "seq") {
        uint64_t v = 0;
        ok = r.u64(v);
        ev.seq = v;
      } else if (k == "t_us") {
        double t = 0;
        ok = r.f64(t);
        if (ok && !(t >= 0 && t < 1.8e16)) why = "time out of range";
        ev.t_ns = ok && why == nullptr ? static_cast<uint64_t>(std::llround(t * 1000.0)) : 0;
      } else if (k == "tid" || k == "pid" || k == "fd" || k == "prot" || k == "len") {
        ok = read_num(r, n, why);
        if (k == "tid") ev.tid = static_cast<int32_t>(n);
        if (k == "pid") ev.pid = static_cast<int32_t>(n);
        if (k == "fd") ev.fd = static_cast<int32_t>(n);
        if (k == "prot") ev.prot = static_cast<uint64_t>(n);
        if (k == "len") ev.len = static_cast<uint64_t>(n);
      } else if (k == "sys") {
        ok = r.string(ev.sys_raw);
        ev.sys = sys_from_name(ev.sys_raw);
        have_sys = ok;
      } else if (k == "path") {
        ok = r.string(ev.path);
      } else if (k == "flags") {
        ok = read_num(r, n, why);
        ev.open_flags = ev.map_flags = static_cast<uint64_t>(n);
      } else if (k == "addr") {
        ok = read_num(r, n, why);
        ev.addr = static_cast<uint64_t>(n);
      } else if (k == "off") {
        ok = read_num(r, n, why);
        ev.offset = static_cast<uint64_t>(n);
      } else if (k == "req") {
        ok = read_num(r, n, why);
        ev.request = static_cast<uint64_t>(n);
      } else if (k == "ret") {
        ok = read_num(r, ret_raw, why);
        have_ret = ok;
      } else if (k == "pre") {
        ok = read_hex(r, arg.before, why);
        have_arg = true;
      } else if (k == "post") {
        ok = read_hex(r, arg.after, why);
        have_arg = true;
      } else if (k == "nptr") {
        ok = read_num(r, n, why);
        nested.addr = static_cast<uint64_t>(n);
        have_nested = true;
      } else if (k == "npre") {
        ok = read_hex(r, nested.before, why);
        have_nested = true;
      } else if (k == "npost") {
        ok = read_hex(r, nested.after, why);
        have_nested = true;
      } else {
        std::string_view raw;
        ok = r.raw(raw);
        ev.extra.push_back({is_trace_member(k) ? "capture." + field : field, std::string(raw)});
      }
      if (!ok) break;
    }
  }
  if (r.ok() && why == nullptr && !r.at_end()) why = "characters after the JSON object";
  if (!r.ok()) return make_error("", field, r.error_offset(), r.error_reason());
  if (why != nullptr) return make_error("", field, r.offset(), why);
  if (!have_sys) return make_error("", "sys", offset, "capture record without \"sys\"");
  if (have_ret) set_result(ev, ret_raw);
  if (ev.sys != Sys::kOpen) ev.open_flags = 0;
  if (ev.sys != Sys::kMmap) ev.map_flags = 0;
  if (ev.sys == Sys::kIoctl || have_arg) {
    arg.role = "arg";
    arg.size = std::max(arg.before.size(), arg.after.size());
    // The capture read 256 bytes (or to the end of the page) of UVM arguments: a bound.
    arg.bounded = nvtr_dev_kind_of_path(ev.path.c_str()) == NVTR_DEV_UVM;
    ev.arg = std::move(arg);
  }
  if (have_nested) {
    nested.role = NVTR_IOC_NR(ev.request) == NVTR_ESC_IOCTL_XFER_CMD ? "xfer" : "params";
    nested.size = std::max(nested.before.size(), nested.after.size());
    ev.nested.push_back(std::move(nested));
  }
  return Status::success();
}

void note_unrecorded(const nvtr_rm_branch* rm, Event& ev) {
  if (ev.sys != Sys::kIoctl || !ev.arg) return;
  int kind = nvtr_dev_kind_of_path(ev.path.c_str());
  const std::vector<uint8_t>& arg = ev.arg->before;
  nvtr_buf_plan plans[2];
  int n =
      nvtr_plan_nested(kind, static_cast<uint32_t>(ev.request), arg.data(), arg.size(), rm, plans);
  if (n == 0) return;
  auto nested = [&](std::string_view role) -> const Buffer* {
    for (const Buffer& b : ev.nested) {
      if (b.role == role) return &b;
    }
    return nullptr;
  };
  if (std::string_view(plans[0].role) == "xfer") {
    const Buffer* x = nested("xfer");
    nvtr_buf_plan inner[2];
    int m = x ? nvtr_plan_xfer_inner(arg.data(), x->before.data(), x->before.size(), rm, inner) : 0;
    for (int i = 0; i < m; ++i) {
      if (inner[i].size > 0) {
        ev.unrecorded.push_back({inner[i].role, "capture format: the escape an XFER wraps"});
      }
    }
    return;
  }
  if (plans[0].class_sized != 0) {
    ev.unrecorded.push_back(
        {"params", fmt::format("alloc parameters not recorded: capture format (paramsSize 0: RM "
                               "sizes them by the class, {} bytes in r{})",
                               plans[0].size, rm->major)});
  } else if (const Buffer* p = nested("params")) {
    nvtr_buf_plan q[NVTR_MAX_POINTEES];
    int dropped = 0;
    int m = nvtr_plan_pointees(rm, &plans[0], p->before.data(), p->before.size(), q,
                               NVTR_MAX_POINTEES, &dropped);
    char role[256];
    for (int i = 0; i < m; ++i) {
      nvtr_role_format(&q[i], role, sizeof role);
      ev.unrecorded.push_back({role, "capture format"});
    }
  }
  if (n == 2) ev.unrecorded.push_back({plans[1].role, "capture format"});  // NVOS64 rights
}

Header import_header(const ImportOptions& o, const std::string& capture_path) {
  Header h;
  h.mode = "import";
  h.driver_version = o.driver_version;
  h.devices = "/dev/nvidia*";
  h.source = o.source_name.empty() ? capture_path : o.source_name;
  h.recorder = "cudatool " CUDATOOL_VERSION " import";
  return h;
}

Result<ImportResult> import_capture(const std::string& path, const ImportOptions& o,
                                    TraceWriter& out, Diagnostics& diag) {
  auto src = LineSource::open(path);
  if (!src) return src.error();
  ImportResult res;
  res.compression = std::string((*src)->compression());
  if (Status st = out.write_header(import_header(o, path)); !st.ok()) return st.error();
  std::string_view line;
  uint64_t off = 0, line_no = 0;
  bool complete = true;
  Event ev;
  const nvtr_rm_branch* rm =
      nvtr_rm_branch_for_major(o.driver_version ? nvtr_driver_major(o.driver_version->c_str()) : 0);
  while ((*src)->next(line, off, complete)) {
    ++line_no;
    if (line.empty()) continue;
    ++res.lines;
    Status st = parse_capture_line(line, off, ev);
    if (!st.ok()) {
      Error e = st.error();
      e.structure = fmt::format("{} line {}", path, line_no);
      if (!complete) e.reason += " (last line, cut short)";
      diag.report(std::move(e));
      continue;
    }
    note_unrecorded(rm, ev);
    if (Status w = out.write_event(ev); !w.ok()) return w.error();
    ++res.events;
    ++res.by_sys[ev.sys_raw];
  }
  if (const auto& e = (*src)->stream_error()) diag.report(*e);
  Trailer t;
  t.events = res.events;
  t.reason = "import";            // converted from a capture: how the program ended is not recorded
  t.exit_status = o.exit_status;  // null unless the user states it
  if (Status st = out.write_trailer(t); !st.ok()) return st.error();
  if (Status st = out.close(); !st.ok()) return st.error();
  return res;
}

}  // namespace cudatool::trace
