// The data of the `ab --html` page: compact JSON in <script type="application/json"> blocks that
// the page's script (ab_html_page.cpp) parses on demand — one block for the comparison (rows of
// the merged order, divergences, the verdict) and one per 1024 events of each trace, so that a
// page of two 100,000-event traces opens at once and parses a block only when its rows come into
// view (or a filter needs them). Layout of one event (the script's `EV` constants name the
// positions): [summary, sys, call, cmd, cmd name, class, class name, status, status name, errno,
// errno name, device, path, tid, pid, seq, fd, client, parent, object, request, ret, t, dur,
// flags, arg struct, arg members, params struct, params members, notes, api, hex]; names are
// indices into the trace's string table, absent values null; a member is [name, value text] or
// [name, [members]] (a structure) or [name, [elements], total] (a list).
#include "cli/ab_html.hpp"

#include <charconv>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "ab/verdict.hpp"
#include "trace/decode.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::cli {
namespace {

constexpr uint32_t kChunk = 1024;

// Length of the valid UTF-8 sequence at s[i], 0 when there is none.
size_t utf8_length(std::string_view s, size_t i) {
  auto u = static_cast<unsigned char>(s[i]);
  size_t n = u >= 0xf0 && u < 0xf5 ? 4 : u >= 0xe0 ? 3 : u >= 0xc2 && u < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

// A JSON string literal that is safe inside <script>: "<" is written as \u003c (so no text can
// close the block), UTF-8 is kept, other bytes outside ASCII are \u00XX (one code point per
// byte, as the rest of cudatool's JSON).
void str(std::string& out, std::string_view s) {
  out += '"';
  size_t run = 0;  // start of the bytes that need no escape
  auto flush = [&](size_t i) {
    out.append(s.data() + run, i - run);
    run = i + 1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u < 0x7f && u != '"' && u != '\\' && u != '<') continue;
    if (u >= 0x80) {
      if (size_t n = utf8_length(s, i)) {
        i += n - 1;
        continue;
      }
    }
    flush(i);
    if (u == '"' || u == '\\') {
      out += '\\';
      out += static_cast<char>(u);
    } else if (u == '\n') {
      out += "\\n";
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

template <class T>
void num(std::string& out, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

template <class T>
void opt(std::string& out, const std::optional<T>& v) {
  if (v) {
    num(out, *v);
  } else {
    out += "null";
  }
}

class Strings {
 public:
  uint32_t id(std::string_view s) {
    if (s.empty()) return 0;
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    uint32_t n = static_cast<uint32_t>(list_.size());
    list_.emplace_back(s);
    ids_.emplace(list_.back(), n);
    return n;
  }
  // The same for a name that lives as long as the program (the tables' names, literals): looked
  // up by its address, which is faster than hashing its text.
  uint32_t id_static(std::string_view s) {
    if (s.empty()) return 0;
    auto key = reinterpret_cast<uintptr_t>(s.data()) ^ (uintptr_t{s.size()} << 48);
    auto [it, added] = by_address_.try_emplace(key, 0);
    if (added) it->second = id(s);
    return it->second;
  }
  void write(std::string& out) const {
    out += '[';
    for (size_t i = 0; i < list_.size(); ++i) {
      if (i) out += ',';
      str(out, list_[i]);
    }
    out += ']';
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  std::vector<std::string> list_{std::string()};
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::unordered_map<uintptr_t, uint32_t> by_address_;
};

void members(std::string& out, Strings& s, const std::vector<rm::Field>& fields) {
  out += '[';
  for (size_t i = 0; i < fields.size(); ++i) {
    const rm::Field& f = fields[i];
    if (i) out += ',';
    out += '[';
    num(out, s.id_static(f.name));
    out += ',';
    if (f.kind == rm::ValueKind::kStruct) {
      members(out, s, f.items);
    } else if (f.kind == rm::ValueKind::kList) {
      members(out, s, f.items);
      out += ',';
      num(out, f.total);
    } else {
      str(out, trace::format_value(f));
    }
    out += ']';
  }
  out += ']';
}

// One side of the page: every event of one trace, decoded, in blocks of kChunk.
struct Side {
  Side(const ab::NormalizedTrace& trace, ab::Namer namer, char side)
      : t(trace), names(namer), id(side) {}

  const ab::NormalizedTrace& t;
  ab::Namer names;
  char id;
  Strings strings;
  std::string blocks;
  uint64_t events = 0;
  std::optional<Error> error;

  void event(const trace::Event& ev, const ab::NormEvent& ne, trace::Decoded& d, std::string& o) {
    const rm::Tables& tb = *t.tables;
    trace::decode_event(tb, ev, d);
    o += '[';
    str(o, ab::summarize(names, ne));
    auto sid = [&](std::string_view v) {  // names from the tables, or literals
      o += ',';
      num(o, strings.id_static(v));
    };
    auto named = [&](const std::optional<uint32_t>& v, std::string_view name) {
      o += ',';
      opt(o, v);
      sid(name);
    };
    sid(trace::sys_name(ev.sys));
    sid(d.call);
    const rm::CtrlEntry* ctrl = d.cmd ? tb.find_control(*d.cmd) : nullptr;
    named(d.cmd, ctrl ? ctrl->name : std::string_view());
    const rm::ClassEntry* cls = d.h_class ? tb.find_class(*d.h_class) : nullptr;
    named(d.h_class, cls ? cls->name : std::string_view());
    named(d.status, d.status_name);
    o += ',';
    num(o, ev.err);
    const char* err_name = ev.err ? strerrorname_np(ev.err) : nullptr;
    sid(err_name ? err_name : "");
    sid(rm::device_name(d.device));
    o += ',';
    num(o, strings.id(ev.path));
    for (int32_t v : {ev.tid, ev.pid}) {
      o += ',';
      num(o, v);
    }
    o += ',';
    num(o, ev.seq);
    o += ',';
    num(o, ev.fd);
    for (const auto* h : {&d.h_client, &d.h_parent, &d.h_object}) {
      o += ',';
      opt(o, *h);
    }
    o += ',';
    opt(o, ev.sys == trace::Sys::kIoctl ? std::optional<uint64_t>(ev.request) : std::nullopt);
    o += ',';
    num(o, ev.ret);
    o += ',';
    num(o, ev.t_ns);
    o += ',';
    opt(o, ev.has_duration ? std::optional<uint64_t>(ev.dur_ns) : std::nullopt);
    int flags = (d.known ? 1 : 0) | (d.notes.empty() ? 0 : 2) | (d.partial.empty() ? 0 : 4) |
                (ev.sys == trace::Sys::kIoctl ? 8 : 0);
    o += ',';
    num(o, flags);
    sid(d.arg_struct);
    o += ',';
    members(o, strings, d.args);
    sid(d.params_struct);
    o += ',';
    if (d.wrapped_struct.empty()) {
      members(o, strings, d.params);
    } else {  // an XFER: the wrapped call's parameters as one more member, named by structure
      thread_local std::vector<rm::Field> with;
      with = d.params;
      rm::Field w;
      w.name = d.wrapped_struct;
      w.kind = rm::ValueKind::kStruct;
      w.items = d.wrapped;
      with.push_back(std::move(w));
      members(o, strings, with);
    }
    o += ",[";
    bool first = true;
    for (const auto* list : {&d.notes, &d.partial}) {
      for (const std::string& n : *list) {
        if (!first) o += ',';
        first = false;
        str(o, n);
      }
    }
    o += "],";
    std::string_view api = ne.api < t.api_names.size() ? t.api_names[ne.api] : "";
    if (api.empty()) {
      o += "null";
    } else {
      str(o, api);
    }
    o += ',';
    str(o, d.hex);
    o += ']';
  }

  void run() {
    auto reader = trace::TraceReader::open(t.path);
    if (!reader) {
      error = reader.error();
      return;
    }
    trace::Event ev;
    trace::Decoded d;
    std::string block;
    auto flush = [&](uint64_t chunk) {
      blocks += "<script type=\"application/json\" id=\"";
      blocks += id;
      num(blocks, chunk);
      blocks += "\">[";
      blocks += block;
      blocks += "]</script>\n";
      block.clear();
    };
    while ((*reader)->next(ev)) {
      if (events >= t.events.size()) break;
      if (events % kChunk != 0) block += ',';
      event(ev, t.events[events], d, block);
      ++events;
      if (events % kChunk == 0) flush(events / kChunk - 1);
    }
    if (events % kChunk != 0) flush(events / kChunk);
    if (events != t.events.size()) {
      error =
          Error{t.path, "", std::nullopt,
                "read " + std::to_string(events) + " events again, not " +
                    std::to_string(t.events.size()) + ": the file changed during the comparison"};
    }
  }
};

std::string trace_text(const ab::NormalizedTrace& t) {
  std::string s = t.path + " — " + std::to_string(t.events.size()) + " events";
  if (t.header.driver_version) s += ", driver " + *t.header.driver_version;
  if (!t.header.gpu.empty()) s += ", GPU " + t.header.gpu;
  for (const std::string& g : ab::gpu_lines(t)) s += "; " + g;
  return s;
}

std::string comparison_data(const ab::Comparison& c, const Side& a, const Side& b) {
  ab::Verdict v = ab::make_verdict(c);
  std::string o;
  o.reserve(c.entries.size() * 24 + 4096);
  o += "{\"schema\":\"cudatool.ab-html/1\",\"chunk\":";
  num(o, kChunk);
  o += ",\"a\":{\"text\":";
  str(o, trace_text(*c.a));
  o += ",\"events\":";
  num(o, c.a->events.size());
  o += ",\"strings\":";
  a.strings.write(o);
  o += "},\"b\":{\"text\":";
  str(o, trace_text(*c.b));
  o += ",\"events\":";
  num(o, c.b->events.size());
  o += ",\"strings\":";
  b.strings.write(o);
  o += "},\"notes\":[";
  for (size_t i = 0; i < c.notes.size(); ++i) {
    if (i) o += ',';
    str(o, (c.notes[i].serious ? "warning: " : "note: ") + c.notes[i].message);
  }
  o += "],\"verdict\":[";
  std::vector<std::string> lines = ab::verdict_lines(c, v);
  lines.push_back(c.equivalent()
                      ? "equivalent: the " + std::to_string(c.a->events.size()) +
                            " events of A and the " + std::to_string(c.b->events.size()) +
                            " of B match after normalisation"
                      : ab::count_line(v));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) o += ',';
    str(o, lines[i]);
  }
  o += "],\"kinds\":[";
  for (int k = 0; k < 5; ++k) {
    if (k) o += ',';
    str(o, ab::kind_name(static_cast<ab::Kind>(k)));
  }
  o += "],\"first\":";
  // Framed and in view: the first divergence with consequences, else the first answer difference.
  const ab::Divergence* first = v.first ? v.first : v.quiet.empty() ? nullptr : v.quiet.front();
  num(o, first == nullptr ? -1 : static_cast<int64_t>(first->entry));
  // Rows: op, A index, B index, divergence index (-1: none), four numbers each.
  std::vector<int64_t> div_of(c.entries.size(), -1);
  for (size_t i = 0; i < c.divergences.size(); ++i) {
    div_of[c.divergences[i].entry] = static_cast<int64_t>(i);
  }
  o += ",\"rows\":[";
  for (size_t k = 0; k < c.entries.size(); ++k) {
    const ab::Entry& e = c.entries[k];
    if (k) o += ',';
    num(o, static_cast<int>(e.op));
    o += ',';
    num(o, e.a == ab::kNone ? int64_t{-1} : int64_t{e.a});
    o += ',';
    num(o, e.b == ab::kNone ? int64_t{-1} : int64_t{e.b});
    o += ',';
    num(o, div_of[k]);
  }
  o += "],\"divs\":[";
  for (size_t i = 0; i < c.divergences.size(); ++i) {
    const ab::Divergence& d = c.divergences[i];
    if (i) o += ',';
    o += '[';
    num(o, static_cast<int>(d.kind));
    o += ab::not_made(v, d) ? ",1,[" : ",0,[";
    for (size_t f = 0; f < d.fields.size(); ++f) {
      const ab::FieldDiff& fd = d.fields[f];
      if (f) o += ',';
      o += '[';
      str(o, fd.field);
      o += ',';
      str(o, fd.side);
      o += ',';
      str(o, fd.a);
      o += ',';
      str(o, fd.b);
      o += ']';
    }
    o += "]]";
  }
  o += "]}";
  return o;
}

}  // namespace

Result<AbHtmlStats> write_ab_html(const ab::Comparison& c, const std::string& path) {
  Side a{*c.a, c.namer_a(), 'a'};
  Side b{*c.b, c.namer_b(), 'b'};
  {
    std::thread other([&] { b.run(); });
    a.run();
    other.join();
  }
  if (a.error) return *a.error;
  if (b.error) return *b.error;
  std::string data = comparison_data(c, a, b);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return Error{path, "", std::nullopt, std::string("cannot write: ") + strerror(errno)};
  uint64_t bytes = 0;
  bool ok = true;
  auto put = [&](std::string_view s) {
    ok &= std::fwrite(s.data(), 1, s.size(), f) == s.size();
    bytes += s.size();
  };
  put(kAbHtmlHead);
  put(a.blocks);
  put(b.blocks);
  put("<script type=\"application/json\" id=\"ab-data\">");
  put(data);
  put("</script>\n");
  put(kAbHtmlTail);
  ok &= std::fclose(f) == 0;
  if (!ok) return Error{path, "", std::nullopt, std::string("write failed: ") + strerror(errno)};
  return AbHtmlStats{bytes, a.events + b.events};
}

}  // namespace cudatool::cli
