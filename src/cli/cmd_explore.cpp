// cudatool explore: which of a recording's answers a program needs, which it tolerates being
// refused, and which wrong values crash it — one replay per experiment (docs/explore.md).
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <mutex>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/explore_output.hpp"
#include "record/signals.hpp"
#include "replay/explore.hpp"

namespace cudatool::cli {
namespace {

struct ExploreCliOptions {
  std::string trace;
  std::vector<std::string> command;
  std::string html;
  std::string shim;
  uint32_t jobs = 0;
  uint32_t max_experiments = 300;
  double deadline = 5;
  double time_limit = 60;
  bool refuse = false;
  bool mutate = false;
  bool json = false;
  bool quiet = false;
  bool force = false;  // --force: --html may replace a file that is not a page
};

void put_stderr(const std::string& s) {
  (void)!write(STDERR_FILENO, s.data(), s.size());
}

// One line per experiment done: "[12/60] fails refuse NV_ESC_RM_CONTROL …".
void progress_line(size_t done, size_t total, const replay::Experiment& e,
                   const replay::ExperimentResult& r) {
  put_stderr(fmt::format("[{}/{}] {:<9} {} {}{} ({:.2f} s)\n", done, total,
                         replay::consequence_name(r.consequence), e.strategy, e.request,
                         e.member.empty() ? "" : " " + e.member + "=" + e.value, r.wall_s));
}

int run_explore_cmd(const ExploreCliOptions& o) {
  if (o.trace.empty() || o.command.empty()) {
    print_error("explore: give one TRACE, then -- CMD [ARGS...]");
    return kExitBadInput;
  }
  if (o.deadline <= 0 || o.time_limit <= 0) {
    print_error("explore: --deadline and --time-limit: seconds, more than 0");
    return kExitBadInput;
  }
  if (!o.html.empty() && !usable_output("--html", o.html, {o.trace}, OutputKind::kHtml, o.force))
    return kExitBadInput;
  replay::ExploreOptions eo;
  eo.trace = o.trace;
  eo.argv = o.command;
  eo.refuse = o.refuse || !o.mutate;  // neither: --refuse
  eo.mutate = o.mutate;
  eo.jobs = o.jobs;
  eo.max_experiments = o.max_experiments;
  eo.deadline_s = o.deadline;
  eo.time_limit_s = o.time_limit;
  eo.shim = o.shim;
  record::RecorderSignals signals;  // Ctrl-C: stop, and report what was done
  eo.stop = [&signals] { return signals.count() > 0; };
  if (!o.quiet) eo.progress = progress_line;
  auto r = replay::run_explore(eo);
  if (!r) {
    print_error(r.error());
    return kExitBadInput;
  }
  std::string out = o.json ? render_explore_json(*r) : render_explore_text(*r);
  (void)!write(STDOUT_FILENO, out.data(), out.size());
  if (!o.html.empty()) {
    if (Status s = write_explore_html(*r, o.html); !s.ok()) {
      print_error(s.error());
      return kExitBadInput;
    }
  }
  if (!r->baseline_ok) {
    print_error(
        fmt::format("explore: {}: nothing to compare the experiments with; see what "
                    "`cudatool replay {} -- …` says",
                    r->baseline_message, o.trace));
    return kExitBadInput;
  }
  for (const auto& x : r->results) {
    if (x.consequence != replay::Consequence::kTolerated &&
        x.consequence != replay::Consequence::kNotRun) {
      return kExitFindings;
    }
  }
  return kExitOk;
}

}  // namespace

void register_explore(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ExploreCliOptions>();
  auto* cmd = app.add_subcommand(
      "explore",
      "What-if sweeps over a recording's answers: which a program needs, which it tolerates "
      "being refused, which wrong values crash it (one replay per experiment)");
  cmd->add_flag("--refuse", o->refuse,
                "refuse every instance of each request kind, as a proxy would (the default)");
  cmd->add_flag("--mutate", o->mutate,
                "put boundary values (0, 1, max, one past the count, all ones) into answer "
                "members, counts and sizes first");
  cmd->add_option("-j,--jobs", o->jobs, "replays run at once (default: the number of CPUs)");
  cmd->add_option("--max-experiments", o->max_experiments, "--mutate's budget of experiments")
      ->capture_default_str();
  cmd->add_option("--deadline", o->deadline,
                  "an experiment without progress for this many seconds hangs")
      ->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit,
                  "an experiment running this many seconds in all hangs")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print the report as JSON (schema cudatool.explore/1)");
  add_force_flag(cmd, o->force);
  cmd->add_option("--html", o->html, "also write the report as one self-contained HTML page");
  cmd->add_option("--shim", o->shim,
                  "the replay shim (default: libcudatool_replay.so beside cudatool)");
  cmd->add_flag("-q,--quiet", o->quiet, "no progress lines on stderr");
  cmd->add_option("TRACE", o->trace, "the recording")->required();
  cmd->add_option("CMD", o->command, "the command to run, after --")->take_all();
  cmd->footer(
      "Examples:\n"
      "  cudatool explore trace_a.jsonl -- ./cuda_probe ./libcuda.so.580.159.04 ctx\n"
      "  cudatool explore run.trace --refuse --mutate --max-experiments 100 -j 4 -- ./work\n"
      "  cudatool explore run.trace --mutate --json -- ./work | jq '.experiments[] | "
      "select(.outcome==\"crashes\") | .reproduce'\n"
      "  cudatool explore run.trace --html explore.html -- ./work\n"
      "A baseline replay runs first (twice: output lines that differ between the two are not\n"
      "compared); if it does not end with status 0, explore says so and stops (exit 2). Each\n"
      "experiment is one `cudatool replay` with --inject specs, in a private directory of its own\n"
      "(relative paths in CMD that name existing files are made absolute). Outcomes: crashes (a\n"
      "signal), hangs (--deadline without progress or --time-limit), fails (another exit status\n"
      "or output: the first API call whose {\"call\":…,\"ret\":…} line changed), tolerated (with\n"
      "the calls libcuda skipped or added instead). Progress goes to stderr; Ctrl-C stops and\n"
      "prints what was done. Exit status: 0 every experiment tolerated, 1 findings, 2 bad input\n"
      "(an unreadable or empty trace, a command that cannot run, a failing baseline).\n"
      "See docs/explore.md.");
  cmd->callback([o, exit_code] { *exit_code = run_explore_cmd(*o); });
}

}  // namespace cudatool::cli
