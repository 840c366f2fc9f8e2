// Header, trailer and module lines of a trace file (docs/trace-format.md); event lines are in
// trace_json.cpp.
#include <fmt/format.h>

#include "trace/trace_json.hpp"
#include "trace/trace_json_line.hpp"

namespace cudatool::trace {

using json_line::Line;
using json_line::LineParser;
using json_line::write_extra;
using json_line::write_string_or_null;

void append_header_line(std::string& out, const Header& h) {
  JsonWriter w(out, false);
  w.begin_object();
  w.kv("cudatool_trace", h.format_version);
  w.key("argv").begin_array();
  for (const auto& a : h.argv) w.value(a);
  w.end_array();
  w.kv("mode", h.mode);
  w.key("driver_version");
  if (h.driver_version) {
    w.value(*h.driver_version);
  } else {
    w.null();
  }
  write_string_or_null(w, "driver_version_line", h.driver_version_line);
  write_string_or_null(w, "host", h.host);
  write_string_or_null(w, "kernel", h.kernel);
  write_string_or_null(w, "start_time", h.start_time);
  w.kv("devices", h.devices);
  if (!h.source.empty()) w.kv("source", h.source);
  if (!h.gpu.empty()) w.kv("gpu", h.gpu);
  if (!h.recorder.empty()) w.kv("recorder", h.recorder);
  if (!h.placement.empty()) w.kv("placement", h.placement);
  if (h.stacks) w.kv("stacks", true);
  if (!h.env.empty()) w.kv("env", h.env);
  if (!h.functions.empty()) w.kv("functions", h.functions);
  write_extra(w, h.extra);
  w.end_object();
  w.finish();
}

void append_trailer_line(std::string& out, const Trailer& t) {
  JsonWriter w(out, false);
  w.begin_object();
  w.key("end").begin_object();
  w.kv("events", t.events).kv("reason", t.reason);
  if (t.exit_status) {
    w.kv("exit_status", *t.exit_status);
  } else {
    w.key("exit_status").null();
  }
  if (!t.routes.empty()) {
    w.key("routes").begin_object();
    for (const auto& [k, n] : t.routes) w.kv(k, n);
    w.end_object();
  }
  if (t.lost != 0) w.kv("lost", t.lost);
  if (t.crash) {
    const CrashSummary& c = *t.crash;
    w.key("crash").begin_object();
    w.kv("signal", c.signal).kv("function", c.function).kv("where", c.where);
    if (c.fault_addr) {
      w.kv_hex("fault_addr", *c.fault_addr);
    } else {
      w.key("fault_addr").null();
    }
    w.kv("tid", c.tid).kv("api", c.api);
    w.end_object();
  }
  write_extra(w, t.extra);
  w.end_object();
  w.end_object();
  w.finish();
}

void append_module_line(std::string& out, const Module& m) {
  Line l(out);
  l.raw("{\"module\":{");
  l.key("pid", true);
  l.num(int64_t{m.pid});
  l.key_str("path", m.path);
  l.key_str("build_id", m.build_id);
  l.key_hex("base", m.base);
  l.key_hex("lo", m.lo);
  l.key_hex("hi", m.hi);
  l.extra(m.extra);
  l.raw("}}\n");
}

void append_stack_record_line(std::string& out, const StackRecord& s) {
  Line l(out);
  l.raw("{\"stack_record\":{");
  l.key("id", true);
  l.num(s.id);
  l.key("stack");
  l.hex_list(s.stack);
  l.raw("}}\n");
}

LineKind classify_line(std::string_view line) {
  // Every event line the recorders write starts so; the other kinds start with their own key.
  if (line.starts_with(kEventLineStart)) return LineKind::kEvent;
  JsonReader r(line);
  std::string_view k;
  if (r.enter_object() && r.next_member(k)) {
    if (k == "cudatool_trace") return LineKind::kHeader;
    if (k == "end") return LineKind::kTrailer;
    if (k == "module") return LineKind::kModule;
    if (k == "stack_record") return LineKind::kStackRecord;
    if (k == "fn_block") return LineKind::kFunctionBlock;
    if (k == "fn_table") return LineKind::kFunctionTable;
  }
  return LineKind::kEvent;
}

Status parse_module_line(std::string_view line, uint64_t offset, Module& m) {
  m = Module{};
  LineParser p(line, offset);
  auto& r = p.r();
  bool have_module = false;
  if (r.enter_object()) {
    std::string_view k;
    while (r.next_member(k)) {
      if (k != "module") {
        std::string_view raw;
        if (!r.raw(raw)) break;
        continue;
      }
      have_module = true;
      if (!r.enter_object()) break;
      while (r.next_member(k)) {
        p.set_field(k);
        bool ok = true;
        if (k == "pid") {
          ok = p.i32(m.pid);
        } else if (k == "path") {
          ok = p.str(m.path);
        } else if (k == "build_id") {
          ok = p.str(m.build_id);
        } else if (k == "base") {
          ok = p.u64(m.base);
        } else if (k == "lo") {
          ok = p.u64(m.lo);
        } else if (k == "hi") {
          ok = p.u64(m.hi);
        } else {
          ok = p.extra(m.extra, k);
        }
        if (!ok) break;
      }
    }
  }
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!have_module) return make_error("", "module", offset, "module line without \"module\"");
  if (m.hi < m.lo) return make_error("", "hi", offset, "module range ends before it starts");
  return Status::success();
}

Status parse_stack_record_line(std::string_view line, uint64_t offset, StackRecord& s) {
  s = StackRecord{};
  LineParser p(line, offset);
  auto& r = p.r();
  bool have_record = false, have_id = false, have_stack = false;
  if (r.enter_object()) {
    std::string_view k;
    while (r.next_member(k)) {
      if (k != "stack_record") {
        std::string_view raw;
        if (!r.raw(raw)) break;
        continue;
      }
      have_record = true;
      if (!r.enter_object()) break;
      while (r.next_member(k)) {
        p.set_field(k);
        bool ok = true;
        if (k == "id") {
          ok = p.u64(s.id);
          have_id = ok;
        } else if (k == "stack") {
          have_stack = ok = p.u64_list(s.stack);
        } else {
          std::string_view raw;  // a member a newer recorder added: nothing here uses it
          ok = r.raw(raw);
        }
        if (!ok) break;
      }
    }
  }
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!have_record) {
    return make_error("", "stack_record", offset, "stack record line without \"stack_record\"");
  }
  if (!have_id || s.id == 0) return make_error("", "id", offset, "stack record without an id (>0)");
  if (!have_stack || s.stack.empty()) {
    return make_error("", "stack", offset, "stack record without frames");
  }
  return Status::success();
}

Status parse_header_line(std::string_view line, uint64_t offset, Header& h) {
  h = Header{};
  h.format_version = 0;
  LineParser p(line, offset);
  auto& r = p.r();
  bool have_version = false;
  if (r.enter_object()) {
    std::string_view k;
    while (r.next_member(k)) {
      p.set_field(k);
      bool ok = true;
      if (k == "cudatool_trace") {
        int64_t v = 0;
        ok = r.i64(v);
        if (ok && (v < 1 || v > 1000000)) ok = p.bad("format version out of range");
        h.format_version = static_cast<int>(v);
        have_version = ok;
      } else if (k == "argv") {
        if ((ok = r.enter_array())) {
          while (r.next_element()) {
            h.argv.emplace_back();
            if (!(ok = r.string(h.argv.back()))) break;
          }
        }
      } else if (k == "mode") {
        ok = p.str(h.mode);
      } else if (k == "driver_version") {
        if (r.peek() == JsonReader::Kind::kNull) {
          ok = r.null();
        } else {
          h.driver_version.emplace();
          ok = r.string(*h.driver_version);
        }
      } else if (k == "driver_version_line") {
        ok = p.str(h.driver_version_line);
      } else if (k == "host") {
        ok = p.str(h.host);
      } else if (k == "kernel") {
        ok = p.str(h.kernel);
      } else if (k == "start_time") {
        ok = p.str(h.start_time);
      } else if (k == "devices") {
        ok = p.str(h.devices);
      } else if (k == "source") {
        ok = p.str(h.source);
      } else if (k == "gpu") {
        ok = p.str(h.gpu);
      } else if (k == "recorder") {
        ok = p.str(h.recorder);
      } else if (k == "placement") {
        ok = p.str(h.placement);
      } else if (k == "stacks") {
        ok = r.boolean(h.stacks);
      } else if (k == "env") {
        ok = p.str(h.env);
      } else if (k == "functions") {
        ok = p.str(h.functions);
      } else {
        ok = p.extra(h.extra, k);
      }
      if (!ok) break;
    }
  }
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!have_version) {
    return make_error("", "cudatool_trace", offset,
                      "not a cudatool trace header (no \"cudatool_trace\" version member)");
  }
  return Status::success();
}

namespace {

// The trailer's "crash" object (CrashSummary); unknown members are skipped.
bool parse_crash(LineParser& p, CrashSummary& c) {
  auto& r = p.r();
  if (!r.enter_object()) return false;
  std::string_view k;
  while (r.next_member(k)) {
    bool ok = true;
    int32_t v = 0;
    if (k == "signal") {
      ok = p.i32(v);
      c.signal = v;
    } else if (k == "tid") {
      ok = p.i32(v);
      c.tid = v;
    } else if (k == "function") {
      ok = p.str(c.function);
    } else if (k == "where") {
      ok = p.str(c.where);
    } else if (k == "api") {
      ok = p.str(c.api);
    } else if (k == "fault_addr") {
      if (r.peek() == JsonReader::Kind::kNull) {
        ok = r.null();
      } else {
        uint64_t a = 0;
        ok = p.u64(a);
        c.fault_addr = a;
      }
    } else {
      ok = r.skip();
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Status parse_trailer_line(std::string_view line, uint64_t offset, Trailer& t) {
  t = Trailer{};
  LineParser p(line, offset);
  auto& r = p.r();
  bool have_end = false;
  if (r.enter_object()) {
    std::string_view k;
    while (r.next_member(k)) {
      if (k != "end") continue;  // unknown top-level members of a trailer: skipped
      have_end = true;
      if (!r.enter_object()) break;
      while (r.next_member(k)) {
        p.set_field(k);
        bool ok = true;
        if (k == "events") {
          ok = p.u64(t.events);
        } else if (k == "reason") {
          ok = p.str(t.reason);
        } else if (k == "exit_status") {
          int32_t v = 0;
          if (r.peek() == JsonReader::Kind::kNull) {
            ok = r.null();
            t.exit_status.reset();
          } else {
            ok = p.i32(v);
            t.exit_status = v;
          }
        } else if (k == "lost") {
          ok = p.u64(t.lost);
        } else if (k == "crash") {
          ok = parse_crash(p, t.crash.emplace());
        } else if (k == "routes") {
          if ((ok = r.enter_object())) {
            std::string_view route;
            while (r.next_member(route)) {
              std::string name(route);
              uint64_t n = 0;
              if (!(ok = p.u64(n))) break;
              t.routes.emplace_back(std::move(name), n);
            }
          }
        } else {
          ok = p.extra(t.extra, k);
        }
        if (!ok) break;
      }
    }
  }
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!have_end) return make_error("", "end", offset, "trailer without an \"end\" member");
  return Status::success();
}

}  // namespace cudatool::trace
