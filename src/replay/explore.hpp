// `cudatool explore TRACE -- CMD`: what-if sweeps over the answers of a recording (issue #33,
// docs/explore.md). Each experiment is one replay (session.hpp) with some answers changed by
// --inject specs: every instance of one request kind refused the way a proxy refuses it
// (--refuse), or one answer member set to a boundary value (--mutate). Each is compared with a
// baseline replay and classified: crashes, hangs, fails, tolerated.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "replay/answers.hpp"
#include "replay/inject.hpp"
#include "replay/session.hpp"

namespace cudatool::replay {

// One experiment: which answers change, and how.
struct Experiment {
  std::string strategy;  // "refuse" | "mutate"
  std::string kind;      // the request kind's key: "control 0x20801303", "mmap /dev/nvidia0"
  std::string request;   // decoded: "NV_ESC_RM_CONTROL NV2080_CTRL_CMD_FB_GET_INFO_V2"
  std::string member;    // mutate: "params.fbInfoListSize"; "" for refuse
  std::string value;     // mutate: "0", "0xffffffff", "recorded+1"; refuse: the effect
  // The CUDA API call that made the request: from the recording's stacks, or for a recording
  // without them from the second baseline replay's function events (libcuda's exports); "".
  std::string api;
  uint64_t count = 0;     // instances of the request in the recording
  uint32_t priority = 0;  // mutate: lower runs first within the budget
  uint32_t index = 0;     // in the plan: refusals, then mutations by priority (the run order)
  std::vector<Injection> injections;  // one per instance changed
};

enum class Consequence : uint8_t { kCrashes, kHangs, kFails, kTolerated, kNotRun };
std::string_view consequence_name(Consequence c);  // "crashes", "hangs", "fails", "tolerated"

// A CUDA API call's result as the program printed it ({"call":"cuInit","ret":100} lines).
struct ApiResult {
  std::string call;
  int64_t ret = 0;
};

struct ExperimentResult {
  Consequence consequence = Consequence::kNotRun;
  std::optional<ReplayEnd> end;  // the replay's; none when it was not run
  int exit_status = 0;           // the program's exit code, or -signal
  int signal = 0;                // crashes: from the exit status
  // crashes: the libcuda function the signal came from (the replay's crash report), "" unknown
  std::string function;
  // fails and crashes: the first API call whose result changed (or was not reached), with the
  // baseline's and this run's results.
  std::string api_call;
  std::optional<int64_t> api_ret, baseline_ret;
  std::string output_change;  // no API line changed: the first output line that did
  // tolerated: what libcuda did instead, from ab's comparison of this run's replayed trace with
  // the baseline's: calls skipped (the baseline made them) and added, by name, with counts.
  std::vector<std::pair<std::string, uint64_t>> skipped, added;
  double wall_s = 0;
  std::string error;  // the replay could not be run (the experiment is kNotRun)
};

struct ExploreOptions {
  std::string trace;
  std::vector<std::string> argv;
  bool refuse = false;
  bool mutate = false;
  uint32_t jobs = 0;               // parallel replays; 0: the number of CPUs
  uint32_t max_experiments = 300;  // --mutate's budget
  double deadline_s = 5;           // per experiment: stopped after this long without progress
  double time_limit_s = 60;        // per experiment: stopped after this long in all
  std::string shim;
  std::function<bool()> stop;  // Ctrl-C: true stops starting experiments and ends running ones
  // Progress: called (from worker threads, serialised) after each experiment.
  std::function<void(size_t done, size_t total, const Experiment&, const ExperimentResult&)>
      progress;
};

struct ExploreReport {
  std::string trace;
  std::vector<std::string> argv;
  std::string driver_version;
  // The baseline: the recording's answers unchanged.
  std::string baseline_end;
  int baseline_exit_status = 0;
  double baseline_wall_s = 0;
  bool baseline_ok = false;
  std::string baseline_message;  // why the baseline is not usable
  std::vector<ApiResult> baseline_api;
  std::string api_source;          // where the experiments' `api` came from, or why it is not known
  uint64_t request_kinds = 0;      // distinct request kinds of the recording
  uint64_t mutate_candidates = 0;  // (kind, member, value) experiments before the budget
  std::vector<Experiment> experiments;  // in report order (see sort_report)
  std::vector<ExperimentResult> results;
  bool interrupted = false;  // Ctrl-C: experiments not run are kNotRun
  uint32_t jobs = 0;
  double wall_s = 0;
};

// The experiments of a recording: refusals of every request kind, mutations of answer members
// (before the budget: the caller cuts). Deterministic: in order of the kinds' first appearance.
std::vector<Experiment> refusal_experiments(const Recording& rec);
std::vector<Experiment> mutation_experiments(const Recording& rec);
// The number of distinct request kinds (what --refuse runs one experiment for).
uint64_t request_kind_count(const Recording& rec);
// The API call of each request kind of `rec` (a replayed run's trace), by the kind's key
// (Experiment::kind): the first of its calls that `api_of` names.
std::map<std::string, std::string> request_kind_apis(
    const Recording& rec, const std::function<std::string(const trace::Event&)>& api_of);

// The {"call":…,"ret":…} lines of a program's output.
std::vector<ApiResult> api_results(const std::string& output);

// The command that reproduces an experiment: cudatool replay TRACE --inject … -- CMD, quoted
// for a POSIX shell.
std::string reproduce_command(const ExploreReport& r, const Experiment& e);

// Runs the baseline, then the experiments. Errors: the trace cannot be read, the baseline cannot
// be run (the shim is missing, the command does not exist). A baseline that runs but fails is
// not an error: baseline_ok is false and no experiment is run.
Result<ExploreReport> run_explore(const ExploreOptions& options);

}  // namespace cudatool::replay
