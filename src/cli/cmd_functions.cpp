// cudatool functions LIB: the function map of a stripped library, from its unwind data.
#include <fmt/compile.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <array>
#include <charconv>
#include <cstring>
#include <iterator>
#include <memory>

#include "analysis/function_map.hpp"
#include "analysis/patch_plan.hpp"
#include "analysis/xrefs.hpp"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/function_output.hpp"
#include "cli/json_diagnostics.hpp"
#include "cli/patch_plan_output.hpp"

namespace cudatool::cli {
namespace {

struct FunctionsOptions {
  NameOptions names;
  std::string lib;
  bool json = false;
  bool gaps = false;
  std::string patch_plan;  // GLOBS of --patch-plan; "" when not asked
};

// --patch-plan: which functions the function recorder can patch, and why not the others.
int run_patch_plan(DriverImage& img, const FunctionMap& map, const FunctionsOptions& o) {
  if (std::string why = check_function_globs(o.patch_plan); !why.empty()) {
    print_error(fmt::format("--patch-plan {}: {}", o.patch_plan, why));
    return kExitBadInput;
  }
  PatchPlan plan = make_patch_plan(img, map, img.facet<XrefIndex>(), o.patch_plan);
  std::string out;
  if (o.json) {
    JsonWriter w(out);
    w.begin_object().kv("schema", "cudatool.patch-plan/1").kv("path", img.path());
    write_patch_plan_json(w, map, plan, true);
    w.key("diagnostics").begin_array();
    for (const auto& e : img.diagnostics().items()) w.value(e.message());
    w.end_array();
    w.end_object();
    w.finish();
  } else {
    out = fmt::format("{}\n{}", img.path(), patch_plan_text(map, plan));
  }
  emit(out);
  return report_diagnostics(img.diagnostics());
}

// Written out in chunks as it grows (the writer keeps its state apart from the text).
void render_json(DriverImage& img, const FunctionMap& map, const std::vector<Gap>& gaps,
                 const FunctionsOptions& o) {
  std::string out;
  constexpr size_t kChunk = 1 << 16;
  out.reserve(kChunk + 4096);
  auto flush = [&](bool force) {
    if (force || out.size() >= kChunk) {
      emit(out);
      out.clear();
    }
  };
  JsonWriter w(out);
  w.begin_object().kv("schema", "cudatool.functions/1").kv("path", img.path());
  if (const auto& id = img.build_id())
    w.kv("build_id", *id);
  else
    w.key("build_id").null();
  write_map_sources_json(w, map);
  Coverage c = coverage(map, gaps);
  w.kv("count", map.functions().size()).kv("named", map.named_functions());
  w.kv("outside_exec", map.outside_exec()).kv("overlaps", map.overlaps());
  w.key("coverage").begin_object();
  w.kv("exec_bytes", c.exec_bytes).kv("gap_bytes", c.gap_bytes).kv("gaps", c.gaps);
  w.kv("padding_gaps", c.padding_gaps).kv("code_gaps", c.code_gaps);
  w.kv("no_byte_gaps", c.no_byte_gaps);
  w.end_object();
  w.key("functions").begin_array();
  for (const auto& f : map.functions()) {
    write_function_json(w, map, f);
    flush(false);
  }
  w.end_array();
  if (o.gaps) {
    w.key("gaps").begin_array();
    for (const auto& g : gaps) {
      w.begin_object().kv_hex("start", g.start).kv_hex("end", g.end).kv("size", g.size());
      w.kv("section", g.section).kv("kind", gap_kind_name(g.kind)).end_object();
      flush(false);
    }
    w.end_array();
  } else {
    w.key("gaps").null();
  }
  w.key("unplaced_names").begin_array();
  for (const auto& u : map.unplaced()) {
    w.begin_object().kv_hex("address", u.address).kv("name", u.name.name);
    w.kv("source", u.name.source).end_object();
  }
  w.end_array();
  write_diagnostics(w, img.diagnostics());
  w.end_object();
  w.finish();
  flush(true);
}

// `n` spaces (none when n <= 0) at p; returns the end. A row's room has 16 bytes to spare past
// each column, so short runs are one fixed-size store (a call to memset per column was a tenth
// of the table's cost).
char* put_spaces(char* p, int n) {
  if (n <= 0) return p;
  if (n <= 16) {
    std::memcpy(p, "                ", 16);
  } else {
    std::memset(p, ' ', static_cast<size_t>(n));
  }
  return p + n;
}

// Right-aligns "0x<hex>" in `width` columns at p; returns the end. Two digits per step.
char* put_hex(char* p, uint64_t v, int width) {
  static constexpr auto kPairs = [] {
    std::array<char, 512> t{};
    const char* d = "0123456789abcdef";
    for (int i = 0; i < 256; ++i) t[2 * i] = d[i >> 4], t[2 * i + 1] = d[i & 15];
    return t;
  }();
  const int digits = (67 - __builtin_clzll(v | 1)) / 4;
  p = put_spaces(p, width - digits - 2);
  *p++ = '0';
  *p++ = 'x';
  char* end = p + digits;
  char* q = end;
  while (v >= 0x100) {
    q -= 2;
    std::memcpy(q, &kPairs[(v & 0xff) * 2], 2);
    v >>= 8;
  }
  if (v >= 0x10) {
    std::memcpy(q - 2, &kPairs[v * 2], 2);
  } else {
    q[-1] = kPairs[v * 2 + 1];
  }
  return end;
}

char* put_dec(char* p, uint64_t v, int width) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  p = put_spaces(p, width - static_cast<int>(r.ptr - tmp));
  std::memcpy(p, tmp, static_cast<size_t>(r.ptr - tmp));
  return p + (r.ptr - tmp);
}

char* put_left(char* p, std::string_view s, int width) {
  std::memcpy(p, s.data(), s.size());
  p += s.size();
  return put_spaces(p, width - static_cast<int>(s.size()));
}

// Output for people goes out in 64 KiB chunks: 12,000 rows never sit in memory at once.
class OutBuffer {
 public:
  OutBuffer() : buf_(new char[kSize]) {}
  ~OutBuffer() { flush(); }
  OutBuffer(const OutBuffer&) = delete;
  OutBuffer& operator=(const OutBuffer&) = delete;

  // A pointer with room for n bytes (n <= kSize); commit() says where the writing ended.
  char* room(size_t n) {
    if (kSize - pos_ < n) flush();
    return buf_.get() + pos_;
  }
  void commit(const char* end) { pos_ = static_cast<size_t>(end - buf_.get()); }
  void append(std::string_view s) {
    if (s.size() > kSize / 2) {
      flush();
      emit(s);
      return;
    }
    char* p = room(s.size());
    std::memcpy(p, s.data(), s.size());
    commit(p + s.size());
  }
  void flush() {
    if (pos_ > 0) emit({buf_.get(), pos_});
    pos_ = 0;
  }

 private:
  static constexpr size_t kSize = 1 << 16;
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0;
};

// The head: the file, the map's counts, the names' sources and the gaps' totals.
std::string text_head(DriverImage& img, const FunctionMap& map, const FunctionsOptions& o,
                      const std::vector<Gap>& gaps) {
  std::string out;
  auto fns = map.functions();
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{:<14}{}\n", "file", img.path());
  out += map_summary_text(map);
  std::string by;
  for (const auto& [source, n] : map.named_by_source())
    by += fmt::format("{}{} by {}", by.empty() ? "" : ", ", n, source);
  fmt::format_to(it, "{:<14}{} ({} named{}{}; the others as fn_<start address>)\n", "functions",
                 fns.size(), map.named_functions(), by.empty() ? "" : ": ", by);
  if (map.outside_exec() > 0 || map.overlaps() > 0) {
    fmt::format_to(it, "{:<14}{} FDEs outside the executable sections, {} overlapping\n", "",
                   map.outside_exec(), map.overlaps());
  }
  if (!map.unplaced().empty()) {
    fmt::format_to(it, "{:<14}{} exported functions start where no FDE does\n", "",
                   map.unplaced().size());
  }
  uint64_t exec_bytes = 0;
  for (const auto& r : map.exec_ranges()) exec_bytes += r.end - r.start;
  if (o.gaps) {
    Coverage c = coverage(map, gaps);
    fmt::format_to(it,
                   "{:<14}{} of {} executable bytes lie in no FDE: {} gaps ({} padding, {} "
                   "code{})\n\n",
                   "gaps", c.gap_bytes, exec_bytes, c.gaps, c.padding_gaps, c.code_gaps,
                   c.no_byte_gaps ? fmt::format(", {} without file bytes", c.no_byte_gaps) : "");
  } else {
    auto [n, bytes] = map.gap_totals();
    fmt::format_to(it,
                   "{:<14}{} of {} executable bytes lie in no FDE, in {} gaps; --gaps lists "
                   "them\n\n",
                   "gaps", bytes, exec_bytes, n);
  }

  return out;
}

void render_text(DriverImage& img, const FunctionMap& map, const FunctionsOptions& o) {
  auto fns = map.functions();
  std::vector<Gap> gaps;
  if (o.gaps) gaps = map.gaps(true);
  std::string out = text_head(img, map, o, gaps);
  auto it = std::back_inserter(out);
  // Column width from the largest address, so every row lines up without a second pass.
  uint64_t top = 0;
  for (const auto& r : map.exec_ranges()) top = std::max(top, r.end);
  for (const auto& f : fns) top = std::max(top, f.end());
  const int aw = static_cast<int>(fmt::formatted_size("{:#x}", top));
  const int sw = 10;  // section column
  fmt::format_to(it, "{:>{}}  {:>{}}  {:>8}  {:<{}}  {}\n", "start", aw, "end", aw, "size",
                 "section", sw, o.gaps ? "kind" : "name");
  OutBuffer ob;
  ob.append(out);
  // One row up to its last column; a section name longer than the buffer's half is cut.
  const size_t fixed = 2 * (static_cast<size_t>(aw) + 20) + 32 + 16;
  auto row = [&](uint64_t b, uint64_t e, uint64_t size, std::string_view sec, size_t tail) {
    sec = sec.substr(0, 4096);
    char* p = ob.room(fixed + sec.size() + tail);
    p = put_hex(p, b, aw);
    *p++ = ' ';
    *p++ = ' ';
    p = put_hex(p, e, aw);
    *p++ = ' ';
    *p++ = ' ';
    p = put_dec(p, size, 8);
    *p++ = ' ';
    *p++ = ' ';
    p = put_left(p, sec, sw);
    *p++ = ' ';
    *p++ = ' ';
    return p;
  };
  if (o.gaps) {
    for (const auto& g : gaps) {
      std::string_view kind = gap_kind_name(g.kind);
      char* p = row(g.start, g.end, g.size(), g.section, kind.size() + 1);
      std::memcpy(p, kind.data(), kind.size());
      p += kind.size();
      *p++ = '\n';
      ob.commit(p);
    }
    return;
  }
  const auto& ranges = map.exec_ranges();
  size_t r = 0;
  for (const auto& f : fns) {
    while (r < ranges.size() && ranges[r].end <= f.start) ++r;
    std::string_view sec =
        r < ranges.size() && f.start >= ranges[r].start ? ranges[r].name : std::string_view("-");
    auto names = map.names(f);
    if (names.empty()) {
      char* p = row(f.start, f.end(), f.size, sec, 24);
      std::memcpy(p, "fn_", 3);
      p = std::to_chars(p + 3, p + 20, f.start, 16).ptr;
      *p++ = '\n';
      ob.commit(p);
      continue;
    }
    ob.commit(row(f.start, f.end(), f.size, sec, 0));
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) ob.append(", ");
      ob.append(names[i].name);
    }
    ob.append("\n");
  }
}

int run_functions(const FunctionsOptions& o) {
  DriverImage* img = open_library_until_exit(o.lib);
  if (!img) return kExitBadInput;
  const FunctionMap& map = named_function_map(*img, o.names);
  if (!o.patch_plan.empty()) return run_patch_plan(*img, map, o);
  if (o.json) {
    render_json(*img, map, map.gaps(true), o);
  } else {
    render_text(*img, map, o);
  }
  int status = report_diagnostics(img->diagnostics());
  if (status == kExitOk && map.hdr_check().disagreement_count > 0) status = kExitFindings;
  return status;
}

}  // namespace

void register_functions(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<FunctionsOptions>();
  auto* cmd = app.add_subcommand(
      "functions", "Function map of a stripped library from its unwind data (.eh_frame)");
  cmd->add_option("LIB", o->lib, "library to read (default: the system's libcuda.so.1)");
  cmd->add_flag("--json", o->json, "print JSON (schema cudatool.functions/1)");
  add_names_option(cmd, o->names);
  cmd->add_flag("--gaps", o->gaps,
                "list the executable ranges no FDE covers (PLT, padding, code without unwind "
                "data) instead of the functions; with --json, add them as \"gaps\"");
  cmd->add_option("--patch-plan", o->patch_plan,
                  "instead of the map: which functions matching GLOBS (comma-separated, "
                  "case-insensitive, '!' excludes; '*' for all) trace --functions can record "
                  "through a patched prologue, and why the others cannot (JSON schema "
                  "cudatool.patch-plan/1)")
      ->expected(0, 1)
      ->default_str("*");
  cmd->footer(
      "Every FDE (frame description entry) of .eh_frame is one function: its start, end and\n"
      "size are those of the FDE; exported symbols name the functions they start; the others\n"
      "are called fn_<start address in hex>. The map is cross-checked against the binary-search\n"
      "table of .eh_frame_hdr that unwinders use; any disagreement is listed and makes the exit\n"
      "status 1. Damaged records are reported (exit status 2) and the rest is still listed.\n"
      "Examples:\n"
      "  cudatool functions ~/.cache/cudatool/drivers/libcuda.so.550.163.01 | head\n"
      "  cudatool functions LIB --gaps\n"
      "  cudatool functions LIB --json | jq -r '.functions[] | select(.size > 65536) | .name'\n"
      "  cudatool functions LIB --patch-plan 'cuCtx*,*.impl'\n"
      "See also: cudatool addr (which function holds an address), cudatool symbolize (a symbol\n"
      "file for gdb, perf and addr2line).");
  cmd->callback([o, exit_code] { *exit_code = run_functions(*o); });
}

}  // namespace cudatool::cli
