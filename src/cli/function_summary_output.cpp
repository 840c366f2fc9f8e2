#include "cli/function_summary_output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/json_writer.hpp"
#include "trace/function_calls.hpp"

namespace cudatool::cli {

std::string function_summary_text(const trace::TraceReader& r, std::string_view prefix) {
  if (r.function_blocks().empty() && r.function_tables().empty()) return "";
  trace::FunctionSummary s = trace::summarize_functions(r.function_tables(), r.function_blocks());
  std::string out = fmt::format(
      "{}function events: {} calls of {} functions in {} threads ({}): {} returned, {} unwound, "
      "{} open{}{}\n",
      prefix, s.calls, s.functions_called, s.threads, fmt::join(s.libraries, ", "), s.returned,
      s.unwound, s.open, s.lost ? fmt::format(", {} not recorded by the recorder", s.lost) : "",
      s.not_kept ? fmt::format(", {} past the depth limit", s.not_kept) : "");
  for (const auto& n : s.first_notes) out += fmt::format("{}  {}\n", prefix, n);
  if (s.notes > s.first_notes.size())
    out += fmt::format("{}  … {} notes in all\n", prefix, s.notes);
  return out;
}

void write_function_summary_json(JsonWriter& w, const trace::TraceReader& r) {
  w.key("functions");
  if (r.function_blocks().empty() && r.function_tables().empty()) {
    w.null();
    return;
  }
  trace::FunctionSummary s = trace::summarize_functions(r.function_tables(), r.function_blocks());
  w.begin_object();
  w.kv("tables", s.tables).kv("blocks", s.blocks).kv("threads", s.threads).kv("calls", s.calls);
  w.kv("returned", s.returned).kv("unwound", s.unwound).kv("open", s.open);
  w.kv("functions_called", s.functions_called).kv("device_marks", s.device_marks);
  w.kv("lost", s.lost).kv("not_kept", s.not_kept).kv("max_depth", s.max_depth);
  w.key("libraries").begin_array();
  for (const auto& l : s.libraries) w.value(l);
  w.end_array();
  w.kv("notes", s.notes);
  w.key("first_notes").begin_array();
  for (const auto& n : s.first_notes) w.value(n);
  w.end_array();
  w.end_object();
}

}  // namespace cudatool::cli
