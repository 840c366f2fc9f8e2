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

std::string function_outcome_text(const record::FunctionOutcome& f, std::string_view prefix) {
  if (f.globs.empty()) return "";
  if (!f.active) {
    return fmt::format("{}functions: none recorded ({}): the run went on without them\n", prefix,
                       f.why_not);
  }
  std::string out = fmt::format(
      "{}functions: {} planned in {} (--functions={}); {} table{}, {} block{} ({} bytes of "
      "records)\n",
      prefix, f.planned, f.library, f.globs, f.tables, f.tables == 1 ? "" : "s", f.blocks,
      f.blocks == 1 ? "" : "s", f.records_bytes);
  if (f.lost != 0) {
    out += fmt::format("{}  {} calls not recorded: the spool was full\n", prefix, f.lost);
  }
  for (const auto& p : f.problems) out += fmt::format("{}  {}\n", prefix, p);
  return out;
}

void write_function_outcome_json(JsonWriter& w, const record::FunctionOutcome& f) {
  w.key("functions");
  if (f.globs.empty()) {
    w.null();
    return;
  }
  w.begin_object();
  w.kv("globs", f.globs).kv("active", f.active);
  w.kv_or_null("library", f.library).kv_or_null("why_not", f.why_not);
  w.kv("planned", f.planned).kv("tables", f.tables).kv("blocks", f.blocks);
  w.kv("records_bytes", f.records_bytes).kv("lost", f.lost);
  w.key("problems").begin_array();
  for (const auto& p : f.problems) w.value(p);
  w.end_array();
  w.end_object();
}

}  // namespace cudatool::cli
