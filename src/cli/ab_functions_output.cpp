#include "cli/ab_functions_output.hpp"

#include <fmt/format.h>

#include "base/json_writer.hpp"

namespace cudatool::cli {
namespace {

std::string ret(const std::string& end, uint64_t v) {
  if (end != "returned") return end;
  auto sv = static_cast<int64_t>(v);
  return sv >= -4096 && sv <= 0xffff ? std::to_string(sv) : fmt::format("{:#x}", v);
}

void devices_json(JsonWriter& w, const std::vector<ab::FunctionDeviceCall>& ds) {
  w.begin_array();
  for (const auto& d : ds) w.begin_object().kv("seq", d.seq).kv("call", d.what).end_object();
  w.end_array();
}

}  // namespace

std::string ab_functions_text(const ab::FunctionComparison& f) {
  if (!f.compared) {
    return f.why_not == "neither trace has function events"
               ? ""
               : fmt::format("\nfunctions: not compared: {}\n", f.why_not);
  }
  std::string out = fmt::format("\nfunctions: {} calls in {} threads of A, {} in {} of B\n",
                                f.calls_a, f.threads_a, f.calls_b, f.threads_b);
  for (const auto& n : f.notes) out += "  note: " + n + "\n";
  if (f.quiet > 0) {
    out += fmt::format(
        "  note: {} caller{} went on as in the other run after a difference below them (a return "
        "value in rax of a function that returns nothing there, {} polling loop{} that turned "
        "another number of times): not differences\n",
        f.quiet, f.quiet == 1 ? "" : "s", f.loop_counts, f.loop_counts == 1 ? "" : "s");
  }
  if (!f.first) {
    out += "functions: equivalent: every thread's calls, callees and return values match\n";
    return out;
  }
  const ab::FunctionDifference& d = *f.first;
  out += fmt::format("functions: first difference ({}), thread {} (tid {} in A, {} in B):\n  {}\n",
                     d.kind, d.thread, d.tid_a, d.tid_b, d.message);
  out += "  the path, with the return values in A and in B:\n";
  for (size_t i = 0; i < d.path.size(); ++i) {
    const auto& s = d.path[i];
    out += fmt::format("  {}{}  A {}  B {}{}\n", std::string(2 * i, ' '), s.function,
                       ret(s.end_a, s.ret_a), ret(s.end_b, s.ret_b), s.same ? "" : "  <- differs");
  }
  for (const auto& [side, ds] : {std::pair{'A', &d.devices_a}, std::pair{'B', &d.devices_b}}) {
    out += fmt::format("  device calls made inside it (or its callees) in {}: {}\n", side,
                       ds->empty() ? "none" : std::to_string(ds->size()));
    constexpr size_t kShown = 12;  // --json has them all
    for (size_t i = 0; i < ds->size() && i < kShown; ++i) {
      out += fmt::format("    #{} {}\n", (*ds)[i].seq, (*ds)[i].what);
    }
    if (ds->size() > kShown) {
      out += fmt::format("    … {} more (--json lists them all)\n", ds->size() - kShown);
    }
  }
  return out;
}

void write_ab_functions_json(JsonWriter& w, const ab::FunctionComparison& f) {
  w.key("functions").begin_object();
  w.kv("compared", f.compared).kv_or_null("why_not", f.why_not);
  w.kv("calls_a", f.calls_a).kv("calls_b", f.calls_b);
  w.kv("threads_a", f.threads_a).kv("threads_b", f.threads_b);
  w.kv("quiet", f.quiet).kv("loop_counts", f.loop_counts);
  w.key("first");
  if (!f.first) {
    w.null();
  } else {
    const ab::FunctionDifference& d = *f.first;
    w.begin_object().kv("kind", d.kind).kv("thread", d.thread);
    w.kv("tid_a", d.tid_a).kv("tid_b", d.tid_b);
    w.kv_or_null("function", d.path.empty() ? std::string() : d.path.back().function);
    w.kv_or_null("callee", d.callee).kv("count_a", d.count_a).kv("count_b", d.count_b);
    w.kv("message", d.message);
    w.key("path").begin_array();
    for (const auto& s : d.path) {
      w.begin_object().kv("function", s.function);
      w.kv("ret_a", fmt::format("{:#x}", s.ret_a)).kv("ret_b", fmt::format("{:#x}", s.ret_b));
      w.kv("end_a", s.end_a).kv("end_b", s.end_b).kv("same", s.same).end_object();
    }
    w.end_array();
    w.key("devices_a");
    devices_json(w, d.devices_a);
    w.key("devices_b");
    devices_json(w, d.devices_b);
    w.end_object();
  }
  w.key("notes").begin_array();
  for (const auto& n : f.notes) w.value(n);
  w.end_array();
  w.end_object();
}

}  // namespace cudatool::cli
