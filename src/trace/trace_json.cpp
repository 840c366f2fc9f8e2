#include "trace/trace_json.hpp"

#include <charconv>
#include <cstring>

#include "base/hex.hpp"
#include "base/json_reader.hpp"
#include "base/json_writer.hpp"

namespace cudatool::trace {
namespace {

// ---------------------------------------------------------------------------------------------
// Writing

void write_extra(JsonWriter& w, const std::vector<ExtraField>& extra) {
  for (const auto& x : extra) w.key(x.key).raw(x.json);
}

void write_string_or_null(JsonWriter& w, std::string_view key, const std::string& v) {
  w.key(key);
  if (v.empty()) {
    w.null();
  } else {
    w.value(v);
  }
}

// Event lines are the bulk of every trace: written with direct appends (member names are
// literals that need no escaping) rather than the general JsonWriter.
class Line {
 public:
  explicit Line(std::string& out) : out_(out) {}
  // ,"name":  (the first member of an object has no comma)
  void key(std::string_view k, bool first = false) {
    if (!first) out_.push_back(',');
    out_.push_back('"');
    out_.append(k);
    out_.append("\":", 2);
  }
  void num(uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void num(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void hex(uint64_t v) {
    char buf[24] = {'"', '0', 'x'};
    auto r = std::to_chars(buf + 3, buf + sizeof buf - 1, v, 16);
    *r.ptr = '"';
    out_.append(buf, r.ptr + 1);
  }
  void str(std::string_view s) { json_escape_to(out_, s); }
  void bytes(const std::vector<uint8_t>& b) {
    static constexpr char kDigits[] = "0123456789abcdef";
    size_t at = out_.size();
    out_.resize(at + 2 * b.size() + 2);
    char* p = out_.data() + at;
    *p++ = '"';
    for (uint8_t c : b) {
      *p++ = kDigits[c >> 4];
      *p++ = kDigits[c & 15];
    }
    *p = '"';
  }
  void raw(std::string_view s) { out_.append(s); }
  void ch(char c) { out_.push_back(c); }
  void extra(const std::vector<ExtraField>& x) {
    for (const auto& f : x) {
      out_.push_back(',');
      json_escape_to(out_, f.key);
      out_.push_back(':');
      out_.append(f.json);
    }
  }

 private:
  std::string& out_;
};

void write_buffer(Line& l, const Buffer& b) {
  l.ch('{');
  l.key("role", true);
  l.str(b.role);
  l.key("addr");
  l.hex(b.addr);
  l.key("size");
  l.num(b.size);
  if (b.bounded) l.raw(",\"bounded\":true");
  if (!b.sized_by.empty()) {
    l.key("sized_by");
    l.str(b.sized_by);
  }
  if (!b.before.empty() || (b.before_error.empty() && b.size > 0)) {
    l.key("pre");
    l.bytes(b.before);
  }
  if (!b.before_error.empty()) {
    l.key("pre_error");
    l.str(b.before_error);
  }
  if (!b.after.empty() || (b.after_error.empty() && b.size > 0)) {
    l.key("post");
    l.bytes(b.after);
  }
  if (!b.after_error.empty()) {
    l.key("post_error");
    l.str(b.after_error);
  }
  l.extra(b.extra);
  l.ch('}');
}

// Whether an environment event's op is one of the chown family (a chmod event without `mode`;
// its uid and gid are members of their own).
bool is_chown_op(std::string_view op) {
  return op.find("chown") != std::string_view::npos;
}

// The members of an environment event (v2) before `ret`: op, path and what the kind adds.
void write_environment(Line& l, const Event& e) {
  l.key("op");
  l.str(e.op);
  l.key("path");
  l.str(e.path);
  auto answer = [&] {
    l.key("mode");
    l.hex(e.mode);
    l.key("rdev");
    l.hex(e.rdev);
    l.key("size");
    l.num(e.st_size);
  };
  auto at_flags = [&] {
    if (e.open_flags != 0) {
      l.key("flags");  // the AT_* flags of fstatat, statx, faccessat2, fchmodat2, unlinkat
      l.hex(e.open_flags);
    }
  };
  switch (e.sys) {
    case Sys::kStat:
      at_flags();
      if (e.has_stat) {
        answer();
      } else if (e.mode != 0) {
        l.key("mode");  // access(2): the amode asked for
        l.hex(e.mode);
      }
      break;
    case Sys::kFile:
      l.key("flags");
      l.hex(e.open_flags);
      if (e.has_stat) answer();  // of what was opened, as the recorder found it
      break;
    case Sys::kMknod:
      l.key("mode");
      l.hex(e.mode);
      l.key("rdev");
      l.hex(e.rdev);
      break;
    case Sys::kSymlink:
    case Sys::kReadlink:
      l.key("target");
      l.str(e.target);
      break;
    case Sys::kChmod:
      at_flags();
      if (!is_chown_op(e.op)) {
        l.key("mode");
        l.hex(e.mode);
      }
      break;
    case Sys::kUnlink:
      at_flags();
      break;
    default:
      break;
  }
}

// A file's content (role "content"): the bytes read are its `post`; there is no `pre`.
void write_content(Line& l, const Buffer& b) {
  l.ch('{');
  l.key("role", true);
  l.str(b.role);
  l.key("addr");
  l.hex(b.addr);
  l.key("size");
  l.num(b.size);
  if (b.bounded) l.raw(",\"bounded\":true");
  if (!b.after.empty() || b.after_error.empty()) {
    l.key("post");
    l.bytes(b.after);
  }
  if (!b.after_error.empty()) {
    l.key("post_error");
    l.str(b.after_error);
  }
  l.extra(b.extra);
  l.ch('}');
}

// ---------------------------------------------------------------------------------------------
// Reading

// The parse state of one line: the pull reader plus the first field-level error.
class LineParser {
 public:
  LineParser(std::string_view line, uint64_t offset) : r_(line, offset, true) {}

  JsonReader& r() { return r_; }

  // A numeric field: a JSON number, or a string "0x…" (hex) / decimal, as the capture format and
  // older tools write them.
  bool u64(uint64_t& v) {
    if (r_.peek() == JsonReader::Kind::kString) {
      std::string_view s;
      if (!r_.string(s)) return false;
      auto x = parse_u64(s, true);
      if (!x) return bad("expected a number or a \"0x…\" string");
      v = *x;
      return true;
    }
    return r_.u64(v);
  }
  bool i64(int64_t& v) {
    if (r_.peek() == JsonReader::Kind::kString) {
      uint64_t u = 0;
      if (!u64(u)) return false;
      v = static_cast<int64_t>(u);
      return true;
    }
    return r_.i64(v);
  }
  bool i32(int32_t& v) {
    int64_t x = 0;
    if (!i64(x)) return false;
    if (x < INT32_MIN || x > INT32_MAX) return bad("out of the range of a 32-bit integer");
    v = static_cast<int32_t>(x);
    return true;
  }
  bool str(std::string& v) {
    if (r_.peek() == JsonReader::Kind::kNull) {
      v.clear();
      return r_.null();
    }
    return r_.string(v);
  }
  bool hex(std::vector<uint8_t>& v) {
    bool not_hex = false;
    if (!r_.hex_string(v, not_hex)) return false;
    if (not_hex) return bad("expected hex digits in pairs");
    return true;
  }
  bool extra(std::vector<ExtraField>& out, std::string_view key) {
    std::string_view raw;
    if (!r_.raw(raw)) return false;
    out.push_back({std::string(key), std::string(raw)});
    return true;
  }
  bool bad(const char* reason) {
    if (field_reason_ == nullptr) {
      field_reason_ = reason;
      field_offset_ = r_.offset();
    }
    return false;
  }
  // The member being read, for errors: `buffer` -1 for a member of "arg", i >= 0 for one of
  // "nested[i]". The view stays valid: parsing stops at the first error.
  void set_field(std::string_view k, int buffer = -2) {
    if (field_reason_ == nullptr && r_.ok()) {
      key_ = k;
      buffer_ = buffer;
    }
  }
  std::string field_name() const {
    if (buffer_ == -2) return std::string(key_);
    std::string prefix = buffer_ == -1   ? "arg."
                         : buffer_ == -3 ? "content."
                                         : "nested[" + std::to_string(buffer_) + "].";
    return prefix + std::string(key_);
  }

  Status finish() {
    if (r_.ok() && field_reason_ == nullptr && !r_.at_end()) {
      return make_error("", "", r_.offset(), "characters after the JSON object");
    }
    if (!r_.ok()) return make_error("", field_name(), r_.error_offset(), r_.error_reason());
    if (field_reason_ != nullptr) return make_error("", field_name(), field_offset_, field_reason_);
    return Status::success();
  }

 private:
  JsonReader r_;
  std::string_view key_;
  int buffer_ = -2;
  const char* field_reason_ = nullptr;
  uint64_t field_offset_ = 0;
};

bool parse_buffer(LineParser& p, Buffer& b, int index) {
  b.role.clear();
  b.addr = b.size = 0;
  b.bounded = false;
  b.sized_by.clear();
  b.before.clear();
  b.after.clear();
  b.before_error.clear();
  b.after_error.clear();
  b.extra.clear();
  auto& r = p.r();
  if (!r.enter_object()) return false;
  std::string_view k;
  while (r.next_member(k)) {
    p.set_field(k, index);
    bool ok = true;
    if (k == "role") {
      ok = r.string(b.role);
    } else if (k == "addr") {
      ok = p.u64(b.addr);
    } else if (k == "size") {
      ok = p.u64(b.size);
    } else if (k == "bounded") {
      ok = r.boolean(b.bounded);
    } else if (k == "sized_by") {
      ok = r.string(b.sized_by);
    } else if (k == "pre") {
      ok = p.hex(b.before);
    } else if (k == "post") {
      ok = p.hex(b.after);
    } else if (k == "pre_error") {
      ok = r.string(b.before_error);
    } else if (k == "post_error") {
      ok = r.string(b.after_error);
    } else {
      ok = p.extra(b.extra, k);
    }
    if (!ok) return false;
  }
  return r.ok();
}

void reset_event(Event& e) {
  e.seq = e.t_ns = e.dur_ns = 0;
  e.has_duration = false;
  e.pid = e.tid = 0;
  e.sys = Sys::kUnknown;
  e.sys_raw.clear();
  e.fd = -1;
  e.path.clear();
  e.request = 0;
  e.ret = 0;
  e.err = 0;
  e.open_flags = e.addr = e.len = e.prot = e.map_flags = e.offset = 0;
  e.child_pid = 0;
  // arg and nested keep their storage (reset after parsing when absent from the line).
  e.stack.clear();
  e.stack_error.clear();
  e.op.clear();
  e.target.clear();
  e.mode = e.rdev = e.st_size = 0;
  e.has_stat = false;
  e.entries.clear();
  e.has_entries = false;
  e.unrecorded.clear();
  e.extra.clear();
}

bool parse_unrecorded(LineParser& p, std::vector<Unrecorded>& out) {
  auto& r = p.r();
  if (!r.enter_array()) return false;
  while (r.next_element()) {
    if (!r.enter_object()) return false;
    Unrecorded u;
    std::string_view k;
    while (r.next_member(k)) {
      bool ok = true;
      if (k == "what") {
        ok = r.string(u.what);
      } else if (k == "why") {
        ok = r.string(u.why);
      } else {
        std::string_view raw;
        ok = r.raw(raw);  // a member a newer writer added: not kept
      }
      if (!ok) return false;
    }
    out.push_back(std::move(u));
  }
  return r.ok();
}

}  // namespace

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
  write_extra(w, h.extra);
  w.end_object();
  w.finish();
}

void append_event_line(std::string& out, const Event& e) {
  Line l(out);
  l.ch('{');
  l.key("seq", true);
  l.num(e.seq);
  l.key("t");
  l.num(e.t_ns);
  if (e.has_duration) {
    l.key("dur");
    l.num(e.dur_ns);
  }
  l.key("pid");
  l.num(int64_t{e.pid});
  l.key("tid");
  l.num(int64_t{e.tid});
  l.key("sys");
  l.str(e.sys == Sys::kUnknown ? std::string_view(e.sys_raw) : sys_name(e.sys));
  auto fd_path = [&] {
    l.key("fd");
    l.num(int64_t{e.fd});
    l.key("path");
    l.str(e.path);
  };
  switch (e.sys) {
    case Sys::kOpen:
      l.key("path");
      l.str(e.path);
      l.key("flags");
      l.hex(e.open_flags);
      break;
    case Sys::kClose:
    case Sys::kDup:
      fd_path();
      break;
    case Sys::kIoctl:
      fd_path();
      l.key("req");
      l.hex(e.request);
      break;
    case Sys::kMmap:
      fd_path();
      l.key("addr");
      l.hex(e.addr);
      l.key("len");
      l.num(e.len);
      l.key("prot");
      l.num(e.prot);
      l.key("flags");
      l.hex(e.map_flags);
      l.key("off");
      l.hex(e.offset);
      break;
    case Sys::kMunmap:
      l.key("addr");
      l.hex(e.addr);
      l.key("len");
      l.num(e.len);
      if (!e.path.empty()) {
        l.key("path");
        l.str(e.path);
      }
      break;
    case Sys::kExecve:
      l.key("path");
      l.str(e.path);
      break;
    case Sys::kFork:
      l.key("child");
      l.num(int64_t{e.child_pid});
      break;
    case Sys::kStat:
    case Sys::kFile:
    case Sys::kMknod:
    case Sys::kSymlink:
    case Sys::kReadlink:
    case Sys::kChmod:
    case Sys::kUnlink:
      write_environment(l, e);
      break;
    case Sys::kExit:
    case Sys::kUnknown:
      break;
  }
  if (e.sys != Sys::kUnknown) {
    l.key("ret");
    l.num(e.ret);
  }
  if (e.err != 0) {
    l.key("errno");
    l.num(int64_t{e.err});
  }
  if (e.arg) {
    l.key("arg");
    write_buffer(l, *e.arg);
  }
  if (!e.nested.empty()) {
    l.key("nested");
    l.ch('[');
    for (size_t i = 0; i < e.nested.size(); ++i) {
      if (i > 0) l.ch(',');
      write_buffer(l, e.nested[i]);
    }
    l.ch(']');
  }
  if (e.content) {
    l.key("content");
    write_content(l, *e.content);
  }
  if (e.has_entries) {
    l.key("entries");
    l.ch('[');
    for (size_t i = 0; i < e.entries.size(); ++i) {
      if (i > 0) l.ch(',');
      l.str(e.entries[i]);
    }
    l.ch(']');
  }
  if (!e.unrecorded.empty()) {
    l.key("unrecorded");
    l.ch('[');
    for (size_t i = 0; i < e.unrecorded.size(); ++i) {
      if (i > 0) l.ch(',');
      l.ch('{');
      l.key("what", true);
      l.str(e.unrecorded[i].what);
      l.key("why");
      l.str(e.unrecorded[i].why);
      l.ch('}');
    }
    l.ch(']');
  }
  if (!e.stack.empty()) {
    l.key("stack");
    l.ch('[');
    for (size_t i = 0; i < e.stack.size(); ++i) {
      if (i > 0) l.ch(',');
      l.hex(e.stack[i]);
    }
    l.ch(']');
  }
  if (!e.stack_error.empty()) {
    l.key("stack_error");
    l.str(e.stack_error);
  }
  l.extra(e.extra);
  l.raw("}\n");
}

void append_trailer_line(std::string& out, const Trailer& t) {
  JsonWriter w(out, false);
  w.begin_object();
  w.key("end").begin_object();
  w.kv("events", t.events).kv("reason", t.reason).kv("exit_status", t.exit_status);
  if (!t.routes.empty()) {
    w.key("routes").begin_object();
    for (const auto& [k, n] : t.routes) w.kv(k, n);
    w.end_object();
  }
  if (t.lost != 0) w.kv("lost", t.lost);
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
  l.key("path");
  l.str(m.path);
  l.key("build_id");
  l.str(m.build_id);
  l.key("base");
  l.hex(m.base);
  l.key("lo");
  l.hex(m.lo);
  l.key("hi");
  l.hex(m.hi);
  l.extra(m.extra);
  l.raw("}}\n");
}

LineKind classify_line(std::string_view line) {
  JsonReader r(line);
  std::string_view k;
  if (r.enter_object() && r.next_member(k)) {
    if (k == "cudatool_trace") return LineKind::kHeader;
    if (k == "end") return LineKind::kTrailer;
    if (k == "module") return LineKind::kModule;
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

bool is_event_member(std::string_view key) {
  // Every key parse_event_line below dispatches on; keep the two in step.
  static constexpr std::string_view kMembers[] = {
      "seq",  "sys",  "stack", "stack_error", "size", "t",   "tid",   "target",  "dur",     "pid",
      "path", "prot", "fd",    "flags",       "req",  "ret", "rdev",  "errno",   "entries", "arg",
      "addr", "len",  "mode",  "unrecorded",  "off",  "op",  "child", "content", "nested"};
  for (std::string_view m : kMembers) {
    if (m == key) return true;
  }
  return false;
}

Status parse_event_line(std::string_view line, uint64_t offset, Event& e) {
  reset_event(e);
  LineParser p(line, offset);
  auto& r = p.r();
  bool have_sys = false, have_arg = false, have_content = false;
  size_t nested = 0;
  if (r.enter_object()) {
    std::string_view k;
    while (r.next_member(k)) {
      p.set_field(k);
      bool ok = true;
      // Dispatch on the first byte, then compare: most keys are one or two candidates away.
      switch (k.empty() ? '\0' : k[0]) {
        case 's':
          if (k == "seq") {
            ok = p.u64(e.seq);
          } else if (k == "sys") {
            ok = r.string(e.sys_raw);
            e.sys = sys_from_name(e.sys_raw);
            have_sys = ok;
          } else if (k == "stack") {
            if ((ok = r.enter_array())) {
              while (r.next_element()) {
                uint64_t a = 0;
                if (!(ok = p.u64(a))) break;
                e.stack.push_back(a);
              }
            }
          } else if (k == "stack_error") {
            ok = r.string(e.stack_error);
          } else if (k == "size") {
            ok = p.u64(e.st_size);
            e.has_stat = ok;
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 't':
          if (k == "t") {
            ok = p.u64(e.t_ns);
          } else if (k == "tid") {
            ok = p.i32(e.tid);
          } else if (k == "target") {
            ok = r.string(e.target);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'd':
          if (k == "dur") {
            ok = p.u64(e.dur_ns);
            e.has_duration = ok;
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'p':
          if (k == "pid") {
            ok = p.i32(e.pid);
          } else if (k == "path") {
            ok = p.str(e.path);
          } else if (k == "prot") {
            ok = p.u64(e.prot);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'f':
          if (k == "fd") {
            ok = p.i32(e.fd);
          } else if (k == "flags") {
            // open(2) flags or mmap(2) flags, by kind; the kind may come later in the line.
            ok = p.u64(e.open_flags);
            e.map_flags = e.open_flags;
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'r':
          if (k == "req") {
            ok = p.u64(e.request);
          } else if (k == "ret") {
            ok = p.i64(e.ret);
          } else if (k == "rdev") {
            ok = p.u64(e.rdev);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'e':
          if (k == "errno") {
            ok = p.i32(e.err);
          } else if (k == "entries") {
            if ((ok = r.enter_array())) {
              e.has_entries = true;
              while (r.next_element()) {
                e.entries.emplace_back();
                if (!(ok = r.string(e.entries.back()))) break;
              }
            }
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'a':
          if (k == "arg") {
            if (!e.arg) e.arg.emplace();
            ok = parse_buffer(p, *e.arg, -1);
            have_arg = true;
          } else if (k == "addr") {
            ok = p.u64(e.addr);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'l':
          if (k == "len") {
            ok = p.u64(e.len);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'm':
          if (k == "mode") {
            ok = p.u64(e.mode);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'u':
          if (k == "unrecorded") {
            ok = parse_unrecorded(p, e.unrecorded);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'o':
          if (k == "off") {
            ok = p.u64(e.offset);
          } else if (k == "op") {
            ok = r.string(e.op);
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'c':
          if (k == "child") {
            ok = p.i32(e.child_pid);
          } else if (k == "content") {
            if (!e.content) e.content.emplace();
            ok = parse_buffer(p, *e.content, -3);
            have_content = true;
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        case 'n':
          if (k == "nested") {
            if ((ok = r.enter_array())) {
              while (r.next_element()) {
                if (nested == e.nested.size()) e.nested.emplace_back();
                if (!(ok = parse_buffer(p, e.nested[nested], static_cast<int>(nested)))) break;
                ++nested;
              }
            }
          } else {
            ok = p.extra(e.extra, k);
          }
          break;
        default:
          ok = p.extra(e.extra, k);
      }
      if (!ok) break;
    }
  }
  if (!have_arg) e.arg.reset();
  if (!have_content) e.content.reset();
  e.nested.resize(nested);
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!have_sys) return make_error("", "sys", offset, "event without a \"sys\" member");
  // "flags" are open(2) flags (open, file), AT_* flags (stat, chmod, unlink) or mmap(2) flags.
  if (e.sys != Sys::kOpen && e.sys != Sys::kFile && e.sys != Sys::kStat && e.sys != Sys::kChmod &&
      e.sys != Sys::kUnlink) {
    e.open_flags = 0;
  }
  if (e.sys != Sys::kMmap) e.map_flags = 0;
  // "size" is st_size only in a stat or file event that holds the answer.
  if (e.sys != Sys::kStat && e.sys != Sys::kFile) {
    e.has_stat = false;
    e.st_size = 0;
  }
  return Status::success();
}

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
          ok = p.i32(v);
          t.exit_status = v;
        } else if (k == "lost") {
          ok = p.u64(t.lost);
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
