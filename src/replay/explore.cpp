// `cudatool explore`: the baseline, the experiments in parallel (each replay in a private
// directory of its own), and their classification against the baseline (explore.hpp).
#include "replay/explore.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "ab/compare.hpp"
#include "record/launch.hpp"
#include "replay/session.hpp"
#include "trace/function_calls.hpp"
#include "trace/function_namer.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::replay {
namespace {

Error explore_err(std::string what) {
  return make_error("explore", "", std::nullopt, std::move(what));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t e = s.find('\n', i);
    if (e == std::string::npos) e = s.size();
    out.push_back(s.substr(i, e - i));
    i = e + 1;
  }
  return out;
}

// The command with its relative paths that name existing files made absolute: each experiment
// runs in a directory of its own.
std::vector<std::string> absolute_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (const std::string& a : argv) {
    struct stat st {};
    bool path = !a.empty() && a[0] != '/' && a[0] != '-' && ::stat(a.c_str(), &st) == 0 &&
                (out.empty() ? a.find('/') != std::string::npos : true);
    out.push_back(path ? record::absolute_path(a) : a);
  }
  return out;
}

// One replay in `dir` (made here, removed by the caller): the report, and the replayed trace
// written to dir/replayed.jsonl.
struct Run {
  ReplayReport report;
  std::string replayed;
};
Result<Run> run_in(const Recording& rec, const ExploreOptions& o,
                   const std::vector<std::string>& argv, const std::vector<Injection>& inj,
                   const std::string& dir, const std::string& functions = "") {
  if (::mkdir(dir.c_str(), 0700) != 0) {
    return explore_err(fmt::format("{}: {}", dir, std::strerror(errno)));
  }
  ReplayOptions ro;
  ro.argv = argv;
  ro.injections = inj;
  ro.output = dir + "/replayed.jsonl";
  ro.deadline_s = o.deadline_s;
  ro.time_limit_s = o.time_limit_s;
  ro.shim = o.shim;
  ro.capture_output = true;
  ro.keep_dir = dir + "/replay";
  ro.work_dir = dir;
  ro.stop = o.stop;
  ro.functions = functions;
  auto r = run_replay(rec, ro);
  if (!r) return r.error();
  return Run{std::move(*r), ro.output};
}

// What the baseline gives every experiment to be compared with.
struct Baseline {
  ReplayReport report;
  std::vector<std::string> lines;
  std::vector<bool> stable;  // the line is the same in both baseline runs
  std::vector<ApiResult> api;
  bool unstable = false;              // the two runs ended differently
  std::optional<Recording> replayed;  // its replayed trace, read back
  // A recording without stacks: the API call of each request kind, by its key, from the second
  // run's function events (kApiFunctions), and what the report says of where they came from.
  std::map<std::string, std::string> kind_api;
  std::string api_source;
};

// The functions the second baseline replay records where the recording has no stacks: libcuda's
// exports, whose outermost call around a device call is the API call that made it.
constexpr const char* kApiFunctions = "cu*,!*.*";

// The API call of each request kind, from a replayed trace with function events.
std::map<std::string, std::string> kind_apis_of(const std::string& replayed) {
  auto reader = trace::TraceReader::open(replayed);
  if (!reader) return {};
  trace::Event ev;
  while ((*reader)->next(ev)) {
  }
  auto threads =
      trace::build_function_calls((*reader)->function_tables(), (*reader)->function_blocks());
  auto outer = trace::outermost_calls(threads);
  auto rec = load_recording(replayed);
  if (!rec) return {};
  trace::FunctionNamer namer;
  return request_kind_apis(*rec, [&](const trace::Event& e) -> std::string {
    auto it = outer.find(e.seq);
    if (it == outer.end()) return "";
    return namer.name(it->second.thread->table_ptr, it->second.call->function);
  });
}

// The first output line that changed, "" when none did (lines unstable between the two
// baseline runs are left out).
std::string output_change(const Baseline& b, const std::vector<std::string>& lines) {
  size_t n = std::min(lines.size(), b.lines.size());
  for (size_t i = 0; i < n; ++i) {
    if (b.stable[i] && lines[i] != b.lines[i]) {
      return fmt::format("line {}: '{}' (baseline '{}')", i + 1, lines[i], b.lines[i]);
    }
  }
  if (lines.size() != b.lines.size()) {
    return fmt::format("{} lines of output (baseline {})", lines.size(), b.lines.size());
  }
  return "";
}

// The first API call whose result changed, or that the run did not come to.
void attribute(const Baseline& b, const std::vector<ApiResult>& api, ExperimentResult& r) {
  for (size_t i = 0; i < b.api.size(); ++i) {
    if (i >= api.size() || api[i].call != b.api[i].call) {
      r.api_call = b.api[i].call;
      r.baseline_ret = b.api[i].ret;
      return;
    }
    if (api[i].ret != b.api[i].ret) {
      r.api_call = api[i].call;
      r.api_ret = api[i].ret;
      r.baseline_ret = b.api[i].ret;
      return;
    }
  }
  if (api.size() > b.api.size()) {
    r.api_call = api[b.api.size()].call;
    r.api_ret = api[b.api.size()].ret;
  }
}

// Calls the experiment's replayed run skipped and added against the baseline's (ab's alignment).
void what_instead(const Baseline& b, const std::string& replayed, ExperimentResult& r) {
  if (!b.replayed) return;
  auto exp = load_recording(replayed);
  if (!exp) return;
  ab::Comparison c = ab::compare(*b.replayed->norm, *exp->norm);
  std::map<std::string, uint64_t> skipped, added;
  for (const ab::Divergence& d : c.divergences) {
    if (d.kind == ab::Kind::kMissing && d.a != ab::kNone) {
      ++skipped[describe(*b.replayed, b.replayed->events[d.a]).name];
    } else if (d.kind == ab::Kind::kExtra && d.b != ab::kNone) {
      ++added[describe(*exp, exp->events[d.b]).name];
    }
  }
  r.skipped.assign(skipped.begin(), skipped.end());
  r.added.assign(added.begin(), added.end());
}

// The one place a crash's libcuda function is named: the replay's crash report (record/crash.hpp)
// names the function the signal came from; without one (ptrace refused) it stays empty and the
// report says "signal N" alone.
void fill_crash_function(const ReplayReport& report, ExperimentResult& r) {
  if (report.crash) r.function = report.crash->function();
}

ExperimentResult classify(const Baseline& b, const Run& run) {
  const ReplayReport& rep = run.report;
  ExperimentResult r;
  r.end = rep.end;
  r.exit_status = rep.exit_status;
  r.wall_s = rep.wall_s;
  std::vector<std::string> lines = lines_of(rep.program_output);
  attribute(b, api_results(rep.program_output), r);
  if (rep.end == ReplayEnd::kDeadline || rep.end == ReplayEnd::kTimeLimit) {
    r.consequence = Consequence::kHangs;
  } else if (rep.end == ReplayEnd::kSignal) {
    r.consequence = Consequence::kCrashes;
    r.signal = -rep.exit_status;
    fill_crash_function(rep, r);
  } else if (rep.end != ReplayEnd::kExit) {
    r.consequence = Consequence::kNotRun;
    r.error = rep.end == ReplayEnd::kRefused ? rep.refusal : std::string(replay_end_name(rep.end));
  } else {
    r.output_change = output_change(b, lines);
    bool same = rep.exit_status == b.report.exit_status && r.output_change.empty();
    r.consequence = same ? Consequence::kTolerated : Consequence::kFails;
    if (same) what_instead(b, run.replayed, r);
  }
  return r;
}

class TempRoot {
 public:
  ~TempRoot() {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  Status create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string t =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cudatool-explore-XXXXXX";
    if (mkdtemp(t.data()) == nullptr)
      return explore_err(fmt::format("{}: {}", t, std::strerror(errno)));
    path_ = t;
    return Status::success();
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void remove_dir(const std::string& d) {
  std::error_code ec;
  std::filesystem::remove_all(d, ec);
}

// The API calls of the request kinds from the second baseline run's function events.
void api_from_functions(const record::FunctionOutcome& f, const std::string& replayed,
                        Baseline& b) {
  if (!f.active) {
    b.api_source = fmt::format("not known: the recording has no call stacks, and {}",
                               f.why_not.empty() ? "no function calls were recorded" : f.why_not);
    return;
  }
  b.kind_api = kind_apis_of(replayed);
  b.api_source = fmt::format(
      "the outermost of libcuda's exports around each request in the second baseline replay "
      "(--functions={}): {} request kinds named",
      kApiFunctions, b.kind_api.size());
}

// The baseline, run twice (output lines that differ between the two are not compared). Where
// the recording has no call stacks the second run records libcuda's exports (kApiFunctions), to
// name the API call of each request kind.
Result<Baseline> run_baseline(const Recording& rec, const ExploreOptions& o,
                              const std::vector<std::string>& argv, const std::string& root,
                              ExploreReport& rep) {
  Baseline b;
  std::vector<std::string> second;
  const bool want_api = !rec.header.stacks;
  b.api_source = want_api ? "" : "the recording's call stacks";
  for (int k = 0; k < 2; ++k) {
    std::string dir = fmt::format("{}/baseline{}", root, k);
    auto r = run_in(rec, o, argv, {}, dir, k == 1 && want_api ? kApiFunctions : "");
    if (!r) return r.error();
    if (k == 0) {
      b.report = std::move(r->report);
      b.lines = lines_of(b.report.program_output);
      auto replayed = load_recording(r->replayed);
      if (replayed) b.replayed = std::move(*replayed);
    } else {
      second = lines_of(r->report.program_output);
      if (r->report.end != b.report.end || r->report.exit_status != b.report.exit_status) {
        b.unstable = true;
      }
      if (want_api) api_from_functions(r->report.functions, r->replayed, b);
    }
    remove_dir(dir);
  }
  for (size_t i = 0; i < b.lines.size(); ++i) {
    b.stable.push_back(i < second.size() && second[i] == b.lines[i]);
  }
  b.api = api_results(b.report.program_output);
  rep.baseline_end = b.unstable ? "unstable" : std::string(replay_end_name(b.report.end));
  rep.baseline_exit_status = b.report.exit_status;
  rep.baseline_wall_s = b.report.wall_s;
  rep.baseline_api = b.api;
  rep.api_source = b.api_source;
  if (!b.unstable && b.report.end == ReplayEnd::kExit && b.report.exit_status == 0) {
    rep.baseline_ok = true;
  } else if (b.unstable) {
    rep.baseline_message = "the two baseline replays ended differently";
  } else if (b.report.end == ReplayEnd::kExit) {
    rep.baseline_message =
        fmt::format("the baseline replay exited with status {}", b.report.exit_status);
  } else if (b.report.end == ReplayEnd::kSignal) {
    rep.baseline_message =
        fmt::format("the baseline replay was killed by signal {}", -b.report.exit_status);
  } else {
    rep.baseline_message =
        fmt::format("the baseline replay ended: {}{}", replay_end_name(b.report.end),
                    b.report.refusal.empty() ? "" : ": " + b.report.refusal);
  }
  return b;
}

// Crashes, hangs, fails, tolerated; within each, in the order the experiments were planned.
void sort_report(ExploreReport& rep) {
  std::vector<size_t> idx(rep.experiments.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return rep.results[a].consequence < rep.results[b].consequence;
  });
  std::vector<Experiment> e;
  std::vector<ExperimentResult> r;
  for (size_t i : idx) {
    e.push_back(std::move(rep.experiments[i]));
    r.push_back(std::move(rep.results[i]));
  }
  rep.experiments = std::move(e);
  rep.results = std::move(r);
}

void run_all(const Recording& rec, const ExploreOptions& o, const std::vector<std::string>& argv,
             const Baseline& b, const std::string& root, ExploreReport& rep) {
  const size_t n = rep.experiments.size();
  rep.results.assign(n, ExperimentResult{});
  std::atomic<size_t> next{0};
  size_t done = 0;
  std::mutex mu;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      if (o.stop && o.stop()) return;
      const Experiment& e = rep.experiments[i];
      std::string dir = fmt::format("{}/e{}", root, i);
      auto r = run_in(rec, o, argv, e.injections, dir);
      ExperimentResult res;
      if (!r) {
        res.error = r.error().message();
      } else if (r->report.end == ReplayEnd::kStopped) {
        remove_dir(dir);
        return;
      } else {
        res = classify(b, *r);
      }
      remove_dir(dir);
      std::lock_guard lock(mu);
      rep.results[i] = std::move(res);
      ++done;
      if (o.progress) o.progress(done, n, e, rep.results[i]);
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t k = 0; k < std::max<uint32_t>(1, rep.jobs); ++k) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
}

std::string shell_quote(const std::string& s) {
  bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("@%_+=:,./-", c) != nullptr;
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string_view consequence_name(Consequence c) {
  switch (c) {
    case Consequence::kCrashes:
      return "crashes";
    case Consequence::kHangs:
      return "hangs";
    case Consequence::kFails:
      return "fails";
    case Consequence::kTolerated:
      return "tolerated";
    case Consequence::kNotRun:
      return "not_run";
  }
  return "?";
}

std::vector<ApiResult> api_results(const std::string& output) {
  std::vector<ApiResult> out;
  for (const std::string& line : lines_of(output)) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("call") || !j["call"].is_string() || !j.contains("ret") ||
        !j["ret"].is_number_integer()) {
      continue;
    }
    out.push_back(ApiResult{j["call"].get<std::string>(), j["ret"].get<int64_t>()});
  }
  return out;
}

std::string reproduce_command(const ExploreReport& r, const Experiment& e) {
  std::string cmd = "cudatool replay " + shell_quote(r.trace);
  for (const Injection& in : e.injections) cmd += " --inject " + shell_quote(in.text);
  cmd += " --";
  for (const std::string& a : r.argv) cmd += " " + shell_quote(a);
  return cmd;
}

Result<ExploreReport> run_explore(const ExploreOptions& o) {
  double t0 = now_s();
  if (o.argv.empty()) return explore_err("no command to run");
  auto rec = load_recording(o.trace);
  if (!rec) return rec.error();
  ExploreReport rep;
  rep.trace = o.trace;
  rep.argv = o.argv;
  rep.driver_version = rec->header.driver_version.value_or("");
  unsigned cpus = std::thread::hardware_concurrency();
  rep.jobs = o.jobs != 0 ? o.jobs : std::max(1u, cpus);
  TempRoot root;
  if (Status s = root.create(); !s.ok()) return s.error();
  std::vector<std::string> argv = absolute_argv(o.argv);
  auto base = run_baseline(*rec, o, argv, root.path(), rep);
  if (!base) return base.error();
  rep.request_kinds = request_kind_count(*rec);
  if (rep.baseline_ok) {
    if (o.refuse) rep.experiments = refusal_experiments(*rec);
    if (o.mutate) {
      std::vector<Experiment> m = mutation_experiments(*rec);
      rep.mutate_candidates = m.size();
      if (m.size() > o.max_experiments) m.resize(o.max_experiments);
      for (Experiment& e : m) rep.experiments.push_back(std::move(e));
    }
    for (size_t i = 0; i < rep.experiments.size(); ++i) {
      Experiment& e = rep.experiments[i];
      e.index = static_cast<uint32_t>(i);
      if (auto it = base->kind_api.find(e.kind); e.api.empty() && it != base->kind_api.end()) {
        e.api = it->second;
      }
    }
    run_all(*rec, o, argv, *base, root.path(), rep);
    rep.interrupted = o.stop && o.stop();
    sort_report(rep);
  }
  rep.wall_s = now_s() - t0;
  return rep;
}

}  // namespace cudatool::replay
