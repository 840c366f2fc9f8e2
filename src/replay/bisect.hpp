// `cudatool replay --bisect GOOD BAD -- CMD`: which of BAD's answers make CMD fail as BAD failed
// (docs/replay.md, "Bisect"). GOOD and BAD are recordings of the same program (bare metal and a
// guest, say); ab's alignment pairs their calls, and the calls BAD answered differently are the
// candidates. GOOD is replayed with subsets of BAD's answers, by delta debugging (ddmin, Zeller
// and Hildebrandt 2002), down to a set of which no single answer can be left out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "replay/answers.hpp"
#include "replay/session.hpp"

namespace cudatool::replay {

struct BisectOptions {
  std::string good, bad;
  std::vector<std::string> argv;
  // A regex on the program's output; "" = BAD's exit status when its trailer holds one that
  // GOOD's does not, else BAD's path (BisectReport::departure).
  std::string fails_if;
  double deadline_s = 10;
  std::string shim;
};

// One of BAD's answers that differs from GOOD's for the same call.
struct AnswerDiff {
  uint32_t good_index = 0, bad_index = 0;  // trace indices
  uint64_t good_seq = 0, bad_seq = 0;
  std::string kind;    // ab's divergence kind
  std::string what;    // the call (GOOD's), decoded
  std::string change;  // "status NV_OK → NV_ERR_NOT_SUPPORTED"
};

struct BisectTry {
  std::vector<uint32_t> subset;  // indices into BisectReport::diffs
  int exit_status = 0;
  ReplayEnd end = ReplayEnd::kExit;
  bool failed = false;  // failed as BAD failed
  std::string crash;    // killed by a signal: "SIGSEGV in fn_2a3b00" (record::CrashReport)
  double wall_s = 0;
};

struct BisectReport {
  std::string good, bad;
  std::vector<std::string> argv;
  // "exit status 1 (BAD's trailer)", "the program's output matches /…/", "its device calls end
  // where BAD's ended: it does not reach GOOD's seq 45 (…)"
  std::string criterion;
  std::string criterion_kind;  // "output" (--fails-if), "exit_status", "crash", "path"
  int bad_exit_status = 0;
  // BAD's path: the first of GOOD's calls that BAD never made, not a teardown (trace index in
  // GOOD), where BAD stopped early against GOOD (ab's early end). A try whose program does not
  // reach it fails as BAD failed, when neither --fails-if nor an exit status decides.
  std::optional<uint32_t> departure;
  // BAD was killed by a signal and its trailer names where: a try fails when it is killed by the
  // same signal in the same function.
  std::optional<trace::CrashSummary> bad_crash;
  std::vector<AnswerDiff> diffs;
  std::vector<BisectTry> tries;   // in the order run, the two baselines first
  std::vector<uint32_t> culprit;  // indices into diffs; empty when not found
  bool found = false;
  std::string message;  // the finding, or why there is none
  double wall_s = 0;
};

// BAD's answers that differ from GOOD's: ab's divergences of status, return or output between
// calls its alignment pairs (not the program's exit), of what both recordings hold — against an
// imported capture, the other is compared as the capture holds its calls.
std::vector<AnswerDiff> differing_answers(const Recording& good, const Recording& bad);

// The same, and where BAD's path departs from GOOD's (BisectReport::departure), from one
// comparison.
struct BisectPlan {
  std::vector<AnswerDiff> diffs;
  std::optional<uint32_t> departure;
};
BisectPlan plan_bisect(const Recording& good, const Recording& bad);

// Errors: a recording cannot be read, the criterion cannot be formed (no --fails-if, no exit
// status that tells BAD from GOOD, and BAD's calls do not end early against GOOD's), a replay
// cannot be run.
Result<BisectReport> run_bisect(const BisectOptions& options);

// ddmin over n items: the smallest subset (1-minimal) for which `fails` holds, given that it
// holds for all n and not for none. `fails` is called with sorted subsets; results are cached.
std::vector<uint32_t> ddmin(uint32_t n,
                            const std::function<bool(const std::vector<uint32_t>&)>& fails);

}  // namespace cudatool::replay
