// Printing of `cudatool abi` (abi_output.hpp).
#include "cli/abi_output.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/json_writer.hpp"
#include "cli/common.hpp"

namespace cudatool::cli {

std::string_view abi_device_name(AbiKind k) {
  return k == AbiKind::kUvm ? "nvidia-uvm" : "nvidia";
}

namespace {

constexpr size_t kFunctionsShown = 3;

std::string_view kind_title(AbiKind k) {
  switch (k) {
    case AbiKind::kEscape:
      return "escapes";
    case AbiKind::kControl:
      return "RM control commands";
    case AbiKind::kClass:
      return "allocation classes";
    case AbiKind::kUvm:
      return "UVM ioctls";
  }
  return "?";
}

std::string value_text(const AbiRequest& r) {
  return r.kind == AbiKind::kControl ? fmt::format("{:#010x}", r.value) : hex(r.value);
}

std::string name_text(const AbiRequest& r) {
  return r.name.empty() ? value_text(r) + "?" : std::string(r.name);
}

std::vector<std::string> function_names(const AbiRequest& r, const FunctionMap& map) {
  std::vector<int32_t> ids;
  for (const AbiUse& u : r.uses) ids.push_back(u.function);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::string> out;
  for (int32_t i : ids) {
    if (i >= 0 && static_cast<size_t>(i) < map.functions().size()) {
      out.push_back(map.display_name(map.functions()[static_cast<size_t>(i)]));
    }
  }
  return out;
}

std::string functions_text(const AbiRequest& r, const FunctionMap& map) {
  std::vector<std::string> names = function_names(r, map);
  std::string out;
  for (size_t i = 0; i < names.size() && i < kFunctionsShown; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  if (names.size() > kFunctionsShown) out += fmt::format(" (+{})", names.size() - kFunctionsShown);
  return out;
}

std::string params_text(const AbiLayout& l) {
  if (l.params.empty()) return "-";
  std::string s = l.size >= 0 ? fmt::format("{} ({})", l.params, l.size)
                              : fmt::format("{} (unmeasured)", l.params);
  if (!l.alt_params.empty()) s += fmt::format(" | {} ({})", l.alt_params, l.alt_size);
  return s;
}

std::string members_text(const AbiLayout& l, AbiMemberRole role) {
  std::string out;
  for (const AbiMember* m : l.with_role(role)) {
    if (!out.empty()) out += ' ';
    out += m->name;
    if (role == AbiMemberRole::kPointer && !m->points_to.empty()) out += "→" + m->points_to;
    if (role == AbiMemberRole::kPointer && m->pointer_status == "not copied") out += "(not copied)";
  }
  return out.empty() ? "-" : out;
}

std::string simple_text(const AbiLayout& l) {
  if (!l.members_known) return l.simple() ? "yes?" : "no";
  return l.simple() ? "yes" : "no";
}

std::string confidence_text(const AbiRequest& r) {
  return r.reason.empty() ? std::string(abi_confidence_name(r.confidence))
                          : fmt::format("{} ({})", abi_confidence_name(r.confidence), r.reason);
}

struct Counts {
  size_t by_kind[4] = {};
  size_t by_conf[3] = {};
};

Counts count(const AbiSurface& s) {
  Counts c;
  for (const AbiRequest& r : s.requests()) {
    ++c.by_kind[static_cast<size_t>(r.kind)];
    ++c.by_conf[static_cast<size_t>(r.confidence)];
  }
  return c;
}

std::string header_text(const AbiSurface& s, const std::string& path) {
  const auto& b = s.branch();
  std::string out = fmt::format(
      "{}: driver {}, tables {} ({}{})\n", path, s.driver_version().value_or("unknown"),
      b.tables->info().id, b.tables->info().version,
      b.exact_major ? ", the same major" : (b.driver_major ? ", the nearest branch" : ", newest"));
  const AbiStats& st = s.stats();
  out += fmt::format(
      "{} direct ioctl call sites in {} functions; {} functions reach them by direct calls\n",
      st.ioctl_call_sites, st.ioctl_callers, st.reaching_functions);
  Counts c = count(s);
  out += fmt::format(
      "surface: {} escapes, {} control commands, {} classes, {} UVM ioctls (confidence: {} high, "
      "{} medium, {} low)\n",
      c.by_kind[0], c.by_kind[1], c.by_kind[2], c.by_kind[3], c.by_conf[0], c.by_conf[1],
      c.by_conf[2]);
  return out;
}

std::vector<std::string> row_of(const AbiRequest& r, const AbiSurface& s, const FunctionMap& map,
                                const AbiTraceFacts* trace) {
  AbiLayout l = abi_layout(s.tables(), r.kind, r.value);
  std::vector<std::string> row = {name_text(r),
                                  value_text(r),
                                  params_text(l),
                                  simple_text(l),
                                  members_text(l, AbiMemberRole::kPointer),
                                  members_text(l, AbiMemberRole::kFd),
                                  members_text(l, AbiMemberRole::kHandle),
                                  confidence_text(r),
                                  functions_text(r, map)};
  if (trace != nullptr) row.insert(row.begin() + 2, trace->seen(r.kind, r.value) ? "yes" : "-");
  return row;
}

std::vector<std::string> headers(const AbiTraceFacts* trace) {
  std::vector<std::string> h = {"request", "value",   "params (bytes)", "simple", "pointers",
                                "fds",     "handles", "confidence",     "used by"};
  if (trace != nullptr) h.insert(h.begin() + 2, "seen");
  return h;
}

void missed_requests(const AbiSurface& s, const AbiTraceFacts& t,
                     std::vector<std::pair<std::pair<AbiKind, uint32_t>, uint64_t>>& out) {
  for (const auto& [k, n] : t.requests) {
    if (s.find(k.first, k.second) == nullptr) out.emplace_back(k, n);
  }
}

}  // namespace

std::string abi_text(const AbiSurface& s, const FunctionMap& map, const std::string& path,
                     const AbiTraceFacts* trace) {
  std::string out = header_text(s, path);
  for (int k = 0; k < 4; ++k) {
    auto kind = static_cast<AbiKind>(k);
    TextTable tab(headers(trace));
    for (const AbiRequest& r : s.requests()) {
      if (r.kind == kind) tab.add(row_of(r, s, map, trace));
    }
    out += fmt::format("\n{} — {} ({})\n", abi_device_name(kind), kind_title(kind), tab.rows());
    if (tab.rows() != 0) out += tab.render("  ");
  }
  if (trace != nullptr) {
    std::vector<std::pair<std::pair<AbiKind, uint32_t>, uint64_t>> missed;
    missed_requests(s, *trace, missed);
    out += fmt::format("\ntraces: {} requests, {} of them not in the static surface\n",
                       trace->requests.size(), missed.size());
    for (const auto& [k, n] : missed) {
      std::string_view name = abi_request_name(s.tables(), k.first, k.second);
      out += fmt::format("  finding: {} {} {} ({} calls) is in a trace but not in the surface\n",
                         abi_kind_name(k.first), name.empty() ? "?" : name, hex(k.second), n);
    }
  }
  return out;
}

std::string abi_markdown(const AbiSurface& s, const FunctionMap& map, const std::string& path,
                         const AbiTraceFacts* trace) {
  std::string out = "# Kernel-ABI surface\n\n";
  std::string h = header_text(s, path);
  for (size_t p = 0; (p = h.find('\n', p)) != std::string::npos && p + 1 < h.size(); p += 3) {
    h.replace(p, 1, "  \n");
  }
  out += h;
  auto cell = [](std::string t) {
    for (size_t p = 0; (p = t.find('|', p)) != std::string::npos; p += 2) t.replace(p, 1, "\\|");
    return t;
  };
  for (int k = 0; k < 4; ++k) {
    auto kind = static_cast<AbiKind>(k);
    out += fmt::format("\n## {} — {}\n\n", abi_device_name(kind), kind_title(kind));
    std::vector<std::string> hs = headers(trace);
    out += "|";
    for (const auto& x : hs) out += " " + x + " |";
    out += "\n|";
    for (size_t i = 0; i < hs.size(); ++i) out += "---|";
    out += "\n";
    for (const AbiRequest& r : s.requests()) {
      if (r.kind != kind) continue;
      out += "|";
      for (auto& c : row_of(r, s, map, trace)) out += " " + cell(c) + " |";
      out += "\n";
    }
  }
  return out;
}

namespace {

void write_members(JsonWriter& w, const AbiLayout& l, AbiMemberRole role, std::string_view key) {
  w.key(key).begin_array();
  for (const AbiMember* m : l.with_role(role)) {
    w.begin_object().kv("name", m->name).kv_or_null("type", m->type);
    if (m->offset >= 0) {
      w.kv("offset", m->offset).kv("size", m->size);
    } else {
      w.key("offset").null().key("size").null();
    }
    if (role == AbiMemberRole::kPointer) {
      w.kv_or_null("status", m->pointer_status).kv_or_null("points_to", m->points_to);
    }
    w.end_object();
  }
  w.end_array();
}

void write_layout(JsonWriter& w, const AbiLayout& l) {
  w.kv_or_null("params", l.params).kv("size", l.size);
  w.kv_or_null("alt_params", l.alt_params);
  if (l.alt_params.empty()) {
    w.key("alt_size").null();
  } else {
    w.kv("alt_size", l.alt_size);
  }
  w.kv("simple", l.simple()).kv("members_known", l.members_known);
  write_members(w, l, AbiMemberRole::kPointer, "pointers");
  write_members(w, l, AbiMemberRole::kFd, "fds");
  write_members(w, l, AbiMemberRole::kHandle, "handles");
}

void write_request(JsonWriter& w, const AbiRequest& r, const AbiSurface& s, const FunctionMap& map,
                   const AbiTraceFacts* trace) {
  w.begin_object().kv("kind", abi_kind_name(r.kind)).kv("device", abi_device_name(r.kind));
  w.kv_hex("value", r.value).kv_or_null("name", r.name);
  w.key("request_codes").begin_array();
  for (uint32_t c : r.request_codes) w.value(hex(c));
  w.end_array();
  w.kv("confidence", abi_confidence_name(r.confidence)).kv_or_null("reason", r.reason);
  write_layout(w, abi_layout(s.tables(), r.kind, r.value));
  w.key("functions").begin_array();
  for (const auto& n : function_names(r, map)) w.value(n);
  w.end_array();
  w.key("sites").begin_array();
  for (const AbiUse& u : r.uses) {
    w.begin_object().kv_hex("address", u.site).kv("table", u.table);
    w.kv("request_arg", u.request_arg).kv("call_arg", u.call_arg);
    w.kv("reaches_ioctl", u.reaches).end_object();
  }
  w.end_array();
  if (trace != nullptr) {
    auto it = trace->requests.find({r.kind, r.value});
    w.kv("trace_calls", it == trace->requests.end() ? 0 : it->second);
  }
  w.end_object();
}

void write_branch(JsonWriter& w, const AbiSurface& s) {
  const auto& b = s.branch();
  w.key("branch").begin_object().kv("id", b.tables->info().id);
  w.kv("release", b.tables->info().version).kv("exact_major", b.exact_major).end_object();
}

}  // namespace

void write_abi_json(JsonWriter& w, const AbiSurface& s, const FunctionMap& map,
                    const std::string& path, const AbiTraceFacts* trace) {
  w.begin_object().kv("schema", "cudatool.abi/1").kv("mode", "surface").kv("path", path);
  w.kv_or_null("driver_version", s.driver_version().value_or(""));
  write_branch(w, s);
  const AbiStats& st = s.stats();
  w.key("stats").begin_object().kv("ioctl_call_sites", st.ioctl_call_sites);
  w.kv("ioctl_callers", st.ioctl_callers).kv("reaching_functions", st.reaching_functions);
  w.kv("immediates", st.immediates).end_object();
  w.key("requests").begin_array();
  for (const AbiRequest& r : s.requests()) write_request(w, r, s, map, trace);
  w.end_array();
  if (trace != nullptr) {
    std::vector<std::pair<std::pair<AbiKind, uint32_t>, uint64_t>> missed;
    missed_requests(s, *trace, missed);
    w.key("trace").begin_object().key("files").begin_array();
    for (const auto& f : trace->files) w.value(f);
    w.end_array().kv("requests", trace->requests.size()).key("missed").begin_array();
    for (const auto& [k, n] : missed) {
      w.begin_object().kv("kind", abi_kind_name(k.first)).kv_hex("value", k.second);
      w.kv_or_null("name", abi_request_name(s.tables(), k.first, k.second)).kv("calls", n);
      w.end_object();
    }
    w.end_array().end_object();
  }
  w.end_object();
}

// --- abi OLD NEW -------------------------------------------------------------------------------

namespace {

std::string change_text(const AbiLayoutChange& c) {
  std::vector<std::string> parts;
  if (c.old_params != c.new_params) {
    parts.push_back(fmt::format("params {} → {}", c.old_params.empty() ? "-" : c.old_params,
                                c.new_params.empty() ? "-" : c.new_params));
  }
  if (c.old_size != c.new_size)
    parts.push_back(fmt::format("size {} → {}", c.old_size, c.new_size));
  auto list = [&](std::string_view what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    std::string s = fmt::format("{} {}: ", what, v.size());
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "; " : "") + v[i];
    parts.push_back(s);
  };
  list("added", c.added);
  list("removed", c.removed);
  list("moved", c.moved);
  list("retyped", c.retyped);
  list("roles", c.roles);
  if (c.unknown_members) parts.emplace_back("(members of one side not in the tables: size only)");
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "\n      " : "") + parts[i];
  return out;
}

std::string side_text(const AbiSurface& s, const std::string& path) {
  return fmt::format("{} (driver {}, tables {})", path, s.driver_version().value_or("unknown"),
                     s.branch().tables->info().id);
}

}  // namespace

std::string abi_diff_summary(const AbiDiff& d) {
  auto high = [](const std::vector<const AbiRequest*>& v) {
    return std::count_if(v.begin(), v.end(),
                         [](const AbiRequest* r) { return r->confidence == AbiConfidence::kHigh; });
  };
  std::string out = fmt::format(
      "{} requests new ({} high confidence), {} gone ({} high), {} of {} in both changed layout",
      d.added.size(), high(d.added), d.removed.size(), high(d.removed), d.changed.size(), d.common);
  size_t shown = 0;
  for (const AbiLayoutChange& c : d.changed) {
    if (c.old_size == c.new_size || shown == 3) continue;
    out +=
        fmt::format("{}{} {}→{}", shown ? ", " : " (sizes: ", c.new_params, c.old_size, c.new_size);
    ++shown;
  }
  if (shown) out += ", …)";
  return out;
}

std::string abi_diff_text(const AbiDiff& d, const AbiSurface& a, const AbiSurface& b,
                          const std::string& old_path, const std::string& new_path) {
  std::string out = fmt::format("OLD {}\nNEW {}\n{}\n", side_text(a, old_path),
                                side_text(b, new_path), abi_diff_summary(d));
  auto list = [&](std::string_view title, const std::vector<const AbiRequest*>& v) {
    out += fmt::format("\n{} ({})\n", title, v.size());
    TextTable tab({"kind", "request", "value", "confidence"});
    for (const AbiRequest* r : v) {
      tab.add({std::string(abi_kind_name(r->kind)), name_text(*r), value_text(*r),
               confidence_text(*r)});
    }
    if (tab.rows() != 0) out += tab.render("  ");
  };
  list("requests new in NEW's code", d.added);
  list("requests gone from NEW's code", d.removed);
  out += fmt::format("\nlayout changes of requests both use ({})\n", d.changed.size());
  for (const AbiLayoutChange& c : d.changed) {
    out += fmt::format("  {} {} {}\n      {}\n", abi_kind_name(c.kind),
                       c.name.empty() ? "?" : c.name, hex(c.value), change_text(c));
  }
  return out;
}

std::string abi_diff_markdown(const AbiDiff& d, const AbiSurface& a, const AbiSurface& b,
                              const std::string& old_path, const std::string& new_path) {
  std::string out =
      fmt::format("# Kernel-ABI changes\n\nOLD {}  \nNEW {}  \n{}\n", side_text(a, old_path),
                  side_text(b, new_path), abi_diff_summary(d));
  auto list = [&](std::string_view title, const std::vector<const AbiRequest*>& v) {
    out +=
        fmt::format("\n## {} ({})\n\n| kind | request | value | confidence |\n|---|---|---|---|\n",
                    title, v.size());
    for (const AbiRequest* r : v) {
      out += fmt::format("| {} | {} | {} | {} |\n", abi_kind_name(r->kind), name_text(*r),
                         value_text(*r), confidence_text(*r));
    }
  };
  list("New in NEW's code", d.added);
  list("Gone from NEW's code", d.removed);
  out += fmt::format("\n## Layout changes ({})\n\n| kind | request | change |\n|---|---|---|\n",
                     d.changed.size());
  for (const AbiLayoutChange& c : d.changed) {
    std::string t = change_text(c);
    for (size_t p = 0; (p = t.find("\n      ", p)) != std::string::npos;) t.replace(p, 7, "<br>");
    out +=
        fmt::format("| {} | {} | {} |\n", abi_kind_name(c.kind), c.name.empty() ? "?" : c.name, t);
  }
  return out;
}

void write_abi_diff_json(JsonWriter& w, const AbiDiff& d, const AbiSurface& a,
                         const AbiSurface& b) {
  w.begin_object().kv("schema", "cudatool.abi/1").kv("mode", "diff");
  for (const auto& [key, s] : {std::pair{"old", &a}, std::pair{"new", &b}}) {
    w.key(key).begin_object().kv_or_null("driver_version", s->driver_version().value_or(""));
    write_branch(w, *s);
    w.end_object();
  }
  auto list = [&](std::string_view key, const std::vector<const AbiRequest*>& v) {
    w.key(key).begin_array();
    for (const AbiRequest* r : v) {
      w.begin_object().kv("kind", abi_kind_name(r->kind)).kv_hex("value", r->value);
      w.kv_or_null("name", r->name).kv("confidence", abi_confidence_name(r->confidence));
      w.end_object();
    }
    w.end_array();
  };
  list("added", d.added);
  list("removed", d.removed);
  w.kv("common", d.common).key("changed").begin_array();
  for (const AbiLayoutChange& c : d.changed) {
    w.begin_object().kv("kind", abi_kind_name(c.kind)).kv_hex("value", c.value);
    w.kv_or_null("name", c.name).kv_or_null("old_params", c.old_params);
    w.kv_or_null("new_params", c.new_params).kv("old_size", c.old_size).kv("new_size", c.new_size);
    for (const auto& [key, v] : {std::pair{"added", &c.added}, std::pair{"removed", &c.removed},
                                 std::pair{"moved", &c.moved}, std::pair{"retyped", &c.retyped},
                                 std::pair{"roles", &c.roles}}) {
      w.key(key).begin_array();
      for (const auto& x : *v) w.value(x);
      w.end_array();
    }
    w.kv("members_known", !c.unknown_members).end_object();
  }
  w.end_array().end_object();
}

}  // namespace cudatool::cli
