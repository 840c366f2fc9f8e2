// Printing for `cudatool explore`: the text table, the JSON (schema cudatool.explore/1,
// docs/json.md) and the --html page (one self-contained file, its data inline, as ab's).
#include "cli/explore_output.hpp"

#include <fmt/format.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/json_writer.hpp"

namespace cudatool::cli {
namespace {

using replay::Consequence;
using replay::Experiment;
using replay::ExperimentResult;
using replay::ExploreReport;

std::string what_changed(const Experiment& e) {
  return e.strategy == "refuse" ? "refused: " + e.value : e.member + " = " + e.value;
}

std::string api_text(const ExperimentResult& r) {
  if (r.api_call.empty()) return "";
  if (!r.api_ret) return fmt::format("{} not returned (baseline {})", r.api_call, *r.baseline_ret);
  if (!r.baseline_ret) return fmt::format("{} {} (not in the baseline)", r.api_call, *r.api_ret);
  return fmt::format("{} {} (baseline {})", r.api_call, *r.api_ret, *r.baseline_ret);
}

std::string counted(const std::vector<std::pair<std::string, uint64_t>>& v) {
  std::string s;
  for (const auto& [name, n] : v) {
    s += fmt::format("{}{}{}", s.empty() ? "" : ", ", name, n > 1 ? fmt::format(" ×{}", n) : "");
  }
  return s;
}

// What the consequence column says for one result.
std::string outcome_text(const ExperimentResult& r) {
  switch (r.consequence) {
    case Consequence::kCrashes:
      return fmt::format("signal {} ({}){}", r.signal, strsignal(r.signal),
                         r.function.empty() ? "" : " in " + r.function);
    case Consequence::kHangs:
      return r.end == replay::ReplayEnd::kTimeLimit ? "time limit passed"
                                                    : "no progress until the deadline";
    case Consequence::kFails: {
      std::string s = fmt::format("exit {}", r.exit_status);
      if (!r.api_call.empty()) return s + "; " + api_text(r);
      return s + (r.output_change.empty() ? "" : "; output " + r.output_change);
    }
    case Consequence::kTolerated: {
      std::string s;
      if (!r.skipped.empty()) s += "skipped " + counted(r.skipped);
      if (!r.added.empty()) s += (s.empty() ? "" : "; ") + std::string("added ") + counted(r.added);
      return s.empty() ? "no call changed" : s;
    }
    case Consequence::kNotRun:
      return r.error.empty() ? "not run (interrupted)" : "not run: " + r.error;
  }
  return "";
}

std::string baseline_line(const ExploreReport& r) {
  std::string s = fmt::format("baseline: {} ({:.2f} s)",
                              r.baseline_ok ? "exit 0" : r.baseline_message, r.baseline_wall_s);
  if (!r.baseline_api.empty()) s += fmt::format(", {} API calls printed", r.baseline_api.size());
  s += "\n";
  if (r.baseline_ok && !r.api_source.empty()) s += "made by (API calls): " + r.api_source + "\n";
  return s;
}

}  // namespace

std::string render_explore_text(const ExploreReport& r) {
  std::string out = fmt::format("explore: {} — driver {}, {} request kinds\n", r.trace,
                                r.driver_version.empty() ? "?" : r.driver_version, r.request_kinds);
  out += baseline_line(r);
  if (!r.baseline_ok) return out + "stopped: the baseline replay must end with status 0\n";
  uint64_t counts[5] = {};
  for (const auto& x : r.results) ++counts[static_cast<int>(x.consequence)];
  out += fmt::format(
      "{} experiments ({} jobs, {:.1f} s): {} crash, {} hang, {} fail, {} tolerated{}{}\n",
      r.experiments.size(), r.jobs, r.wall_s, counts[0], counts[1], counts[2], counts[3],
      counts[4] ? fmt::format(", {} not run", counts[4]) : "",
      r.mutate_candidates > 0 ? fmt::format(" (--mutate: {} candidates)", r.mutate_candidates)
                              : "");
  if (r.interrupted) out += "interrupted: what was done so far\n";
  Consequence last = Consequence::kNotRun;
  bool first = true;
  for (size_t i = 0; i < r.experiments.size(); ++i) {
    const Experiment& e = r.experiments[i];
    const ExperimentResult& x = r.results[i];
    if (first || x.consequence != last) {
      out += fmt::format("{}:\n", replay::consequence_name(x.consequence));
      last = x.consequence;
      first = false;
    }
    out +=
        fmt::format("  {:<9} {} ×{}: {} → {}{}\n", e.strategy, e.request, e.count, what_changed(e),
                    outcome_text(x), e.api.empty() ? "" : fmt::format(" (made by {})", e.api));
    if (x.consequence == Consequence::kCrashes || x.consequence == Consequence::kHangs) {
      out += "    reproduce: " + replay::reproduce_command(r, e) + "\n";
    }
  }
  return out;
}

std::string render_explore_json(const ExploreReport& r) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().kv("schema", "cudatool.explore/1").kv("trace", r.trace);
  w.key("argv").begin_array();
  for (const auto& a : r.argv) w.value(a);
  w.end_array();
  w.kv("driver_version", r.driver_version).kv("request_kinds", r.request_kinds);
  w.key("baseline").begin_object().kv("ok", r.baseline_ok).kv("end", r.baseline_end);
  w.kv("exit_status", r.baseline_exit_status).kv("wall_s", r.baseline_wall_s);
  w.kv_or_null("message", r.baseline_message).end_object();
  w.kv_or_null("api_source", r.api_source);
  w.kv("jobs", r.jobs).kv("mutate_candidates", r.mutate_candidates);
  w.kv("interrupted", r.interrupted).kv("wall_s", r.wall_s);
  w.key("experiments").begin_array();
  for (size_t i = 0; i < r.experiments.size(); ++i) {
    const Experiment& e = r.experiments[i];
    const ExperimentResult& x = r.results[i];
    w.begin_object().kv("index", e.index).kv("strategy", e.strategy).kv("kind", e.kind);
    w.kv("request", e.request);
    w.kv_or_null("member", e.member).kv("value", e.value).kv("count", e.count);
    w.kv_or_null("api", e.api).kv("outcome", replay::consequence_name(x.consequence));
    w.kv("end", x.end ? replay::replay_end_name(*x.end) : "").kv("exit_status", x.exit_status);
    w.kv_or_null("api_call", x.api_call);
    w.key("cuda_result");
    x.api_ret ? w.value(*x.api_ret) : w.null();
    w.key("baseline_result");
    x.baseline_ret ? w.value(*x.baseline_ret) : w.null();
    w.key("signal");
    x.signal ? w.value(x.signal) : w.null();
    w.kv_or_null("function", x.function).kv_or_null("output_change", x.output_change);
    for (const char* side : {"skipped", "added"}) {
      w.key(side).begin_array();
      for (const auto& [name, n] : side[0] == 's' ? x.skipped : x.added) {
        w.begin_object().kv("call", name).kv("count", n).end_object();
      }
      w.end_array();
    }
    w.key("inject").begin_array();
    for (const auto& in : e.injections) w.value(in.text);
    w.end_array();
    w.kv_or_null("reproduce",
                 x.consequence == Consequence::kCrashes || x.consequence == Consequence::kHangs
                     ? replay::reproduce_command(r, e)
                     : "");
    w.kv("wall_s", x.wall_s).kv_or_null("error", x.error).end_object();
  }
  w.end_array();
  w.end_object();
  w.finish();
  return out;
}

Status write_explore_html(const ExploreReport& r, const std::string& path) {
  std::string data = render_explore_json(r);
  // The data sits in a <script> block: "</" may not appear in it.
  for (size_t p = 0; (p = data.find("</", p)) != std::string::npos; p += 3)
    data.replace(p, 2, "<\\/");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return Error{path, "", std::nullopt, std::string("cannot write: ") + std::strerror(errno)};
  }
  bool ok = true;
  auto put = [&](std::string_view s) { ok &= std::fwrite(s.data(), 1, s.size(), f) == s.size(); };
  put(kExploreHtmlHead);
  put("<script type=\"application/json\" id=\"explore-data\">");
  put(data);
  put("</script>\n");
  put(kExploreHtmlTail);
  ok &= std::fclose(f) == 0;
  if (!ok) {
    return Error{path, "", std::nullopt, std::string("write failed: ") + std::strerror(errno)};
  }
  return Status::success();
}

}  // namespace cudatool::cli
