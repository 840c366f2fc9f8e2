// Function table and function block lines of a trace file (v4, docs/trace-format.md "Function
// events").
#include <fmt/format.h>

#include "trace/function_events.hpp"
#include "trace/trace_json.hpp"
#include "trace/trace_json_line.hpp"

namespace cudatool::trace {

using json_line::Line;
using json_line::LineParser;

namespace {

// Calls `member(key)` for each member of the object under `top` ({"top":{…}}); other top-level
// members are skipped. False when the line has no `top`.
template <class Member>
bool each_member(LineParser& p, std::string_view top, Member&& member) {
  auto& r = p.r();
  bool found = false;
  if (!r.enter_object()) return false;
  std::string_view k;
  while (r.next_member(k)) {
    if (k != top) {
      std::string_view raw;
      if (!r.raw(raw)) break;
      continue;
    }
    found = true;
    if (!r.enter_object()) break;
    while (r.next_member(k)) {
      p.set_field(k);
      if (!member(k)) break;
    }
  }
  return found;
}

}  // namespace

void append_function_table_line(std::string& out, const FunctionTable& t) {
  Line l(out);
  l.raw("{\"fn_table\":{");
  l.key("id", true);
  l.num(t.id);
  l.key("pid");
  l.num(int64_t{t.pid});
  l.key("path");
  l.str(t.path);
  l.key("build_id");
  l.str(t.build_id);
  l.key("base");
  l.hex(t.base);
  l.key("functions");
  l.num(uint64_t{t.starts.size()});
  l.key("starts_leb128");
  l.bytes(encode_function_starts(t.starts));
  l.key("globs");
  l.str(t.globs);
  l.key("selected");
  l.num(t.selected);
  l.key("not_patchable");
  l.num(t.not_patchable);
  l.key("skipped");
  l.num(t.skipped);
  l.key("install_ns");
  l.num(t.install_ns);
  l.extra(t.extra);
  l.raw("}}\n");
}

void append_function_block_line(std::string& out, const FunctionBlock& b) {
  Line l(out);
  l.raw("{\"fn_block\":{");
  l.key("table", true);
  l.num(b.table);
  l.key("pid");
  l.num(int64_t{b.pid});
  l.key("tid");
  l.num(int64_t{b.tid});
  l.key("part");
  l.num(b.part);
  l.key("t");
  l.num(b.t_ns);
  if (b.closed) l.raw(",\"closed\":true");
  l.key("data");
  l.bytes(b.data);
  l.extra(b.extra);
  l.raw("}}\n");
}

Status parse_function_table_line(std::string_view line, uint64_t offset, FunctionTable& t) {
  t = FunctionTable{};
  LineParser p(line, offset);
  std::optional<uint64_t> count;
  std::vector<uint8_t> starts;
  bool have_starts = false;
  bool found = each_member(p, "fn_table", [&](std::string_view k) {
    if (k == "id") return p.u64(t.id);
    if (k == "pid") return p.i32(t.pid);
    if (k == "path") return p.str(t.path);
    if (k == "build_id") return p.str(t.build_id);
    if (k == "base") return p.u64(t.base);
    if (k == "functions") return p.u64(count.emplace());
    if (k == "starts_leb128") return have_starts = p.hex(starts);
    if (k == "globs") return p.str(t.globs);
    if (k == "selected") return p.u64(t.selected);
    if (k == "not_patchable") return p.u64(t.not_patchable);
    if (k == "skipped") return p.u64(t.skipped);
    if (k == "install_ns") return p.u64(t.install_ns);
    return p.extra(t.extra, k);
  });
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!found) return make_error("", "fn_table", offset, "function table line without \"fn_table\"");
  if (t.id == 0) return make_error("", "id", offset, "function table without an id (> 0)");
  if (!have_starts) return make_error("", "starts_leb128", offset, "function table without starts");
  Status dec = decode_function_starts(starts, t.starts);
  if (!dec.ok()) return make_error("", "starts_leb128", offset, dec.error().reason);
  if (count && *count != t.starts.size()) {
    return make_error(
        "", "functions", offset,
        fmt::format("says {} functions, starts_leb128 holds {}", *count, t.starts.size()));
  }
  return Status::success();
}

Status parse_function_block_line(std::string_view line, uint64_t offset, FunctionBlock& b) {
  b = FunctionBlock{};
  LineParser p(line, offset);
  bool have_data = false, have_table = false;
  bool found = each_member(p, "fn_block", [&](std::string_view k) {
    if (k == "table") return have_table = p.u64(b.table);
    if (k == "pid") return p.i32(b.pid);
    if (k == "tid") return p.i32(b.tid);
    if (k == "part") return p.u64(b.part);
    if (k == "t") return p.u64(b.t_ns);
    if (k == "closed") return p.r().boolean(b.closed);
    if (k == "data") return have_data = p.hex(b.data);
    return p.extra(b.extra, k);
  });
  Status st = p.finish();
  if (!st.ok()) return st;
  if (!found) return make_error("", "fn_block", offset, "function block line without \"fn_block\"");
  if (!have_table || b.table == 0) {
    return make_error("", "table", offset, "function block without a table id (> 0)");
  }
  if (!have_data) return make_error("", "data", offset, "function block without data");
  return Status::success();
}

}  // namespace cudatool::trace
