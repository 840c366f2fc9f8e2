#include "trace/trace_json.hpp"

#include <charconv>
#include <cstring>

#include "base/hex.hpp"
#include "base/json_reader.hpp"
#include "base/json_writer.hpp"
#include "base/short_key.hpp"
#include "trace/trace_json_line.hpp"

namespace cudatool::trace {
namespace {

using json_line::Line;
using json_line::LineParser;
using json_line::write_extra;

// ---------------------------------------------------------------------------------------------
// Writing

// One buffer object. A file's content (`content`: role "content") has no `pre` and no
// `sized_by`; its `post`, the bytes read, is written even when none were.
void write_buffer(Line& l, const Buffer& b, bool content = false) {
  l.ch('{');
  l.key("role", true);
  l.str(b.role);
  l.key_hex("addr", b.addr);
  l.key_num("size", b.size);
  if (b.bounded) l.raw(",\"bounded\":true");
  if (!content) {
    if (!b.sized_by.empty()) {
      l.key_str("sized_by", b.sized_by);
    }
    if (!b.before.empty() || (b.before_error.empty() && b.size > 0)) {
      l.key("pre");
      l.bytes(b.before);
    }
    if (!b.before_error.empty()) {
      l.key_str("pre_error", b.before_error);
    }
  }
  if (!b.after.empty() || (b.after_error.empty() && (content || b.size > 0))) {
    l.key("post");
    l.bytes(b.after);
  }
  if (!b.after_error.empty()) {
    l.key_str("post_error", b.after_error);
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
  l.key_str("op", e.op);
  l.key_str("path", e.path);
  auto answer = [&] {
    l.key_hex("mode", e.mode);
    l.key_hex("rdev", e.rdev);
    l.key_num("size", e.st_size);
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
      l.key_hex("flags", e.open_flags);
      if (e.has_stat) answer();  // of what was opened, as the recorder found it
      break;
    case Sys::kMknod:
      l.key_hex("mode", e.mode);
      l.key_hex("rdev", e.rdev);
      break;
    case Sys::kSymlink:
    case Sys::kReadlink:
      l.key_str("target", e.target);
      break;
    case Sys::kChmod:
      at_flags();
      if (!is_chown_op(e.op)) {
        l.key_hex("mode", e.mode);
      }
      break;
    case Sys::kUnlink:
      at_flags();
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Reading

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
    switch (r.packed_key(k)) {
      case short_key("role"):
        ok = r.string(b.role);
        break;
      case short_key("addr"):
        ok = p.u64(b.addr);
        break;
      case short_key("size"):
        ok = p.u64(b.size);
        break;
      case short_key("bounded"):
        ok = r.boolean(b.bounded);
        break;
      case short_key("pre"):
        ok = p.hex(b.before);
        break;
      case short_key("post"):
        ok = p.hex(b.after);
        break;
      default:
        if (k == "sized_by") {
          ok = r.string(b.sized_by);
        } else if (k == "pre_error") {
          ok = r.string(b.before_error);
        } else if (k == "post_error") {
          ok = r.string(b.after_error);
        } else {
          ok = p.extra(b.extra, k);
        }
        break;
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
  e.stack_ref = 0;
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

namespace {

// The members of one kind of call: "path" and "flags" of an open, "req" of an ioctl, …
void write_call_members(Line& l, const Event& e) {
  auto fd_path = [&] {
    l.key_num("fd", int64_t{e.fd});
    l.key_str("path", e.path);
  };
  switch (e.sys) {
    case Sys::kOpen:
      l.key_str("path", e.path);
      l.key_hex("flags", e.open_flags);
      break;
    case Sys::kClose:
    case Sys::kDup:
      fd_path();
      break;
    case Sys::kIoctl:
      fd_path();
      l.key_hex("req", e.request);
      break;
    case Sys::kMmap:
      fd_path();
      l.key_hex("addr", e.addr);
      l.key_num("len", e.len);
      l.key_num("prot", e.prot);
      l.key_hex("flags", e.map_flags);
      l.key_hex("off", e.offset);
      break;
    case Sys::kMunmap:
      l.key_hex("addr", e.addr);
      l.key_num("len", e.len);
      if (!e.path.empty()) {
        l.key_str("path", e.path);
      }
      break;
    case Sys::kExecve:
      l.key_str("path", e.path);
      break;
    case Sys::kFork:
      l.key_num("child", int64_t{e.child_pid});
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
}

// The recorded bytes and lists: "arg", "nested", "content", "entries", "unrecorded".
void write_event_buffers(Line& l, const Event& e) {
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
    write_buffer(l, *e.content, true);
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
      l.key_str("why", e.unrecorded[i].why);
      l.ch('}');
    }
    l.ch(']');
  }
}

}  // namespace

void append_event_line(std::string& out, const Event& e, uint64_t stack_ref) {
  Line l(out);
  l.ch('{');
  l.key("seq", true);
  l.num(e.seq);
  l.key_num("t", e.t_ns);
  if (e.has_duration) {
    l.key_num("dur", e.dur_ns);
  }
  l.key_num("pid", int64_t{e.pid});
  l.key_num("tid", int64_t{e.tid});
  l.key_str("sys", e.sys == Sys::kUnknown ? std::string_view(e.sys_raw) : sys_name(e.sys));
  write_call_members(l, e);
  if (e.sys != Sys::kUnknown) {
    l.key_num("ret", e.ret);
  }
  if (e.err != 0) {
    l.key_num("errno", int64_t{e.err});
  }
  write_event_buffers(l, e);
  if (!e.stack.empty() && stack_ref != 0) {
    l.key_num("stack_ref", stack_ref);
  } else if (!e.stack.empty()) {
    l.key("stack");
    l.hex_list(e.stack);
  }
  if (!e.stack_error.empty()) {
    l.key_str("stack_error", e.stack_error);
  }
  l.extra(e.extra);
  l.raw("}\n");
}

bool is_event_member(std::string_view key) {
  // Every key parse_event_line below dispatches on; keep the two in step.
  static constexpr std::string_view kMembers[] = {
      "seq",        "sys",  "stack", "stack_error", "stack_ref", "size",  "t",     "tid",
      "target",     "dur",  "pid",   "path",        "prot",      "fd",    "flags", "req",
      "ret",        "rdev", "errno", "entries",     "arg",       "addr",  "len",   "mode",
      "unrecorded", "off",  "op",    "child",       "content",   "nested"};
  for (std::string_view m : kMembers) {
    if (m == key) return true;
  }
  return false;
}

namespace {

// What parse_event_line learns across the members of one line.
struct EventLineState {
  bool have_sys = false, have_arg = false, have_content = false;
  size_t nested = 0;  // buffers of "nested" read (the event's vector is reused between lines)
};

// "entries": the names of a directory listing.
bool parse_entries(LineParser& p, Event& e) {
  auto& r = p.r();
  if (!r.enter_array()) return false;
  e.has_entries = true;
  while (r.next_element()) {
    e.entries.emplace_back();
    if (!r.string(e.entries.back())) return false;
  }
  return true;
}

// "nested": the buffers behind pointer members, numbered from 0.
bool parse_nested(LineParser& p, Event& e, EventLineState& st) {
  auto& r = p.r();
  if (!r.enter_array()) return false;
  while (r.next_element()) {
    if (st.nested == e.nested.size()) e.nested.emplace_back();
    if (!parse_buffer(p, e.nested[st.nested], static_cast<int>(st.nested))) return false;
    ++st.nested;
  }
  return true;
}

// Reads one member of an event line into `e`; false when its value is bad. A key the format does
// not define is kept in e.extra. One switch on the key as an integer (base/short_key.hpp); the
// three longer keys are compared as strings.
bool parse_event_member(LineParser& p, std::string_view k, Event& e, EventLineState& st) {
  auto& r = p.r();
  switch (r.packed_key(k)) {
    case short_key("seq"):
      return p.u64(e.seq);
    case short_key("sys"): {
      bool ok = r.string(e.sys_raw);
      e.sys = sys_from_name(e.sys_raw);
      st.have_sys = ok;
      return ok;
    }
    case short_key("stack"):
      return p.u64_list(e.stack);
    case short_key("size"):
      return e.has_stat = p.u64(e.st_size);
    case short_key("t"):
      return p.u64(e.t_ns);
    case short_key("tid"):
      return p.i32(e.tid);
    case short_key("target"):
      return r.string(e.target);
    case short_key("dur"):
      return e.has_duration = p.u64(e.dur_ns);
    case short_key("pid"):
      return p.i32(e.pid);
    case short_key("path"):
      return p.str(e.path);
    case short_key("prot"):
      return p.u64(e.prot);
    case short_key("fd"):
      return p.i32(e.fd);
    case short_key("flags"): {
      // open(2) flags or mmap(2) flags, by kind; the kind may come later in the line.
      bool ok = p.u64(e.open_flags);
      e.map_flags = e.open_flags;
      return ok;
    }
    case short_key("req"):
      return p.u64(e.request);
    case short_key("ret"):
      return p.i64(e.ret);
    case short_key("rdev"):
      return p.u64(e.rdev);
    case short_key("errno"):
      return p.i32(e.err);
    case short_key("entries"):
      return parse_entries(p, e);
    case short_key("arg"):
      if (!e.arg) e.arg.emplace();
      st.have_arg = true;
      return parse_buffer(p, *e.arg, -1);
    case short_key("addr"):
      return p.u64(e.addr);
    case short_key("len"):
      return p.u64(e.len);
    case short_key("mode"):
      return p.u64(e.mode);
    case short_key("off"):
      return p.u64(e.offset);
    case short_key("op"):
      return r.string(e.op);
    case short_key("child"):
      return p.i32(e.child_pid);
    case short_key("content"):
      if (!e.content) e.content.emplace();
      st.have_content = true;
      return parse_buffer(p, *e.content, -3);
    case short_key("nested"):
      return parse_nested(p, e, st);
    case kLongKey:
      if (k == "stack_error") return r.string(e.stack_error);
      if (k == "stack_ref") {
        if (!p.u64(e.stack_ref)) return false;
        return e.stack_ref != 0 || p.bad("stack_ref 0 names no stack record");
      }
      if (k == "unrecorded") return parse_unrecorded(p, e.unrecorded);
      break;
    default:
      break;
  }
  return p.extra(e.extra, k);
}

// Drops what one kind of event does not hold: members shared by kinds ("flags", "size") mean
// something only in some.
void keep_what_the_kind_holds(Event& e) {
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
}

}  // namespace

namespace {

// The members of an event line, into `e` (reset first); then what every caller does with them.
void read_event_members(LineParser& p, Event& e, EventLineState& st) {
  reset_event(e);
  auto& r = p.r();
  if (r.enter_object()) {
    std::string_view k;
    while (r.next_member(k)) {
      p.set_field(k);
      if (!parse_event_member(p, k, e, st)) break;
    }
  }
  if (!st.have_arg) e.arg.reset();
  if (!st.have_content) e.content.reset();
  e.nested.resize(st.nested);
}

}  // namespace

Status parse_event_line(std::string_view line, uint64_t offset, Event& e) {
  LineParser p(line, offset);
  EventLineState st;
  read_event_members(p, e, st);
  Status status = p.finish();
  if (!status.ok()) return status;
  if (!st.have_sys) return make_error("", "sys", offset, "event without a \"sys\" member");
  keep_what_the_kind_holds(e);
  return Status::success();
}

bool parse_first_event_line(std::string_view text, uint64_t offset, Event& e, size_t& length) {
  LineParser p(text, offset);
  p.r().stop_at_newline();
  EventLineState st;
  read_event_members(p, e, st);
  size_t end = p.r().position();
  if (!p.clean() || !st.have_sys || end >= text.size() || text[end] != '\n') return false;
  keep_what_the_kind_holds(e);
  length = end;
  return true;
}

}  // namespace cudatool::trace
