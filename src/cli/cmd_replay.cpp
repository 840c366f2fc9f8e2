// cudatool replay: run a program with its kernel-driver calls answered from a recorded trace.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/replay_output.hpp"
#include "replay/bisect.hpp"
#include "replay/session.hpp"

namespace cudatool::cli {
namespace {

struct ReplayCliOptions {
  std::string trace, bisect_good;  // as CLI11 fills them
  std::vector<std::string> command;
  std::vector<std::string> args;  // TRACE (or GOOD BAD) -- CMD ARGS…, as left over by CLI11
  std::vector<std::string> injects;
  std::string output;
  std::string report;
  std::string shim;
  std::string keep;
  std::string fails_if;
  std::string functions;  // --functions[=GLOBS]; "" not given
  std::string functions_lib;
  std::string execute = "none";
  double deadline = 10;
  bool bisect = false;
  bool json = false;
  bool program_status = false;
  bool quiet = false;
  bool force = false;
  bool no_crash_report = false;
  bool aslr = false;
};

// Opens --report before anything runs, so that a report that cannot be written is said at
// once, not after the replay (and not lost).
bool open_report(const ReplayCliOptions& o, std::ofstream& f) {
  if (o.report.empty()) return true;
  f.open(o.report, std::ios::binary | std::ios::trunc);
  if (f) return true;
  print_error(fmt::format("--report {}: cannot write: {}", o.report, std::strerror(errno)));
  return false;
}

// The report goes to --report's file when one was given, else to stderr (unless --quiet).
// False, with an error printed, when the file could not take it.
bool put_report(const ReplayCliOptions& o, std::ofstream& f, const std::string& text) {
  if (!o.report.empty()) {
    f << text;
    f.flush();
    if (f) return true;
    print_error(fmt::format("--report {}: cannot write: {}", o.report, std::strerror(errno)));
    (void)!write(STDERR_FILENO, text.data(), text.size());
    return false;
  }
  if (!o.quiet) (void)!write(STDERR_FILENO, text.data(), text.size());
  return true;
}

// The positionals at "--": the traces before it, the command after; false (said) when they do
// not make a run.
bool split_args(const ReplayCliOptions& o, std::vector<std::string>& traces,
                std::vector<std::string>& command) {
  // Split the positionals at "--": traces before it, the command after.
  auto dash = std::find(o.args.begin(), o.args.end(), "--");
  size_t want = o.bisect ? 2 : 1;
  if (dash != o.args.end()) {
    traces.assign(o.args.begin(), dash);
    command.assign(dash + 1, o.args.end());
  } else {
    for (size_t i = 0; i < o.args.size(); ++i) (i < want ? traces : command).push_back(o.args[i]);
  }
  if (traces.size() != want) {
    print_error(o.bisect ? "replay --bisect: give GOOD.trace BAD.trace, then -- CMD [ARGS...]"
                         : "replay: give one TRACE, then -- CMD [ARGS...]");
    return false;
  }
  if (command.empty()) {
    print_error(o.bisect ? fmt::format("replay --bisect: no command to run ('{}' was taken as "
                                       "BAD.trace): cudatool replay --bisect GOOD.trace BAD.trace "
                                       "-- CMD [ARGS...]",
                                       traces[1])
                         : std::string("replay: no command to run: cudatool replay TRACE -- CMD "
                                       "[ARGS...]"));
    return false;
  }
  if (o.deadline < 0) {
    print_error("replay: --deadline: seconds, 0 for none");
    return false;
  }
  return true;
}

// Outputs that would overwrite a trace this command reads are refused before anything runs.
bool outputs_usable(const ReplayCliOptions& o, const std::vector<std::string>& traces) {
  const std::string_view second = traces.size() > 1 ? std::string_view(traces[1]) : "";
  if (!o.report.empty() &&
      !usable_output("--report", o.report, {traces[0], second}, OutputKind::kText, o.force)) {
    return false;
  }
  if (!o.output.empty() &&
      !usable_output("-o", o.output, {traces[0], second}, OutputKind::kTrace, o.force)) {
    return false;
  }
  return true;
}

int run_bisect_cmd(const ReplayCliOptions& o, const std::vector<std::string>& traces,
                   const std::vector<std::string>& command, std::ofstream& report_file) {
  if (!o.injects.empty() || !o.output.empty() || !o.keep.empty() || o.program_status ||
      !o.functions.empty()) {
    print_error(
        "replay --bisect: --inject, -o, --keep, --program-status and --functions belong to a "
        "single replay");
    return kExitBadInput;
  }
  replay::BisectOptions bo;
  bo.good = traces[0];
  bo.bad = traces[1];
  bo.argv = command;
  bo.fails_if = o.fails_if;
  bo.deadline_s = o.deadline;
  bo.shim = o.shim;
  auto r = replay::run_bisect(bo);
  if (!r) {
    print_error(r.error());
    return kExitBadInput;
  }
  if (!put_report(o, report_file, o.json ? render_bisect_json(*r) : render_bisect_text(*r))) {
    return kExitBadInput;
  }
  return r->found ? kExitFindings : kExitOk;
}

int run_single_cmd(const ReplayCliOptions& o, const std::vector<std::string>& traces,
                   const std::vector<std::string>& command, std::ofstream& report_file) {
  if (!o.fails_if.empty()) {
    print_error("replay: --fails-if belongs to --bisect");
    return kExitBadInput;
  }
  replay::ReplayOptions ro;
  for (const std::string& spec : o.injects) {
    auto inj = replay::parse_injection(spec);
    if (!inj) {
      print_error(inj.error());
      return kExitBadInput;
    }
    ro.injections.push_back(std::move(*inj));
  }
  auto rec = replay::load_recording(traces[0]);
  if (!rec) {
    print_error(rec.error());
    return kExitBadInput;
  }
  // Damaged lines: named, skipped, and the exit status says bad input (2) once the replay,
  // answered from the rest of the trace, has reported.
  for (const Error& e : rec->diagnostics.items()) {
    print_error(
        fmt::format("{} (skipped: the replay answers from the rest of the trace)", e.message()));
  }
  const bool damaged = rec->diagnostics.count() != 0;
  ro.argv = command;
  ro.output = o.output;
  ro.deadline_s = o.deadline;
  ro.execute = o.execute;
  ro.shim = o.shim;
  ro.keep_dir = o.keep;
  ro.functions = o.functions;
  ro.functions_lib = o.functions_lib;
  if (!o.functions.empty() && o.output.empty()) {
    fmt::print(stderr,
               "cudatool: note: --functions records into the replayed trace: give -o FILE to "
               "keep the function events\n");
  }
  ro.crash_report = !o.no_crash_report;
  ro.fixed_layout = !o.aslr;
  auto r = replay::run_replay(*rec, ro);
  if (!r) {
    print_error(r.error());
    return kExitBadInput;
  }
  if (!put_report(o, report_file, o.json ? render_replay_json(*r) : render_replay_text(*r))) {
    return kExitBadInput;
  }
  if (o.program_status && r->end != replay::ReplayEnd::kRefused) {
    return r->exit_status < 0 ? 128 - r->exit_status : r->exit_status;
  }
  return damaged ? kExitBadInput : r->verdict;
}

int run_replay_cmd(ReplayCliOptions& o) {
  std::vector<std::string> traces, command;
  if (!split_args(o, traces, command) || !outputs_usable(o, traces)) return kExitBadInput;
  std::ofstream report_file;
  if (!open_report(o, report_file)) return kExitBadInput;
  return o.bisect ? run_bisect_cmd(o, traces, command, report_file)
                  : run_single_cmd(o, traces, command, report_file);
}

constexpr const char* kReplayFooter =
    "Examples:\n"
    "  cudatool replay run.trace -- ./work kern.cubin\n"
    "  cudatool replay a.trace --inject cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,nth=1,"
    "status=NV_ERR_NOT_SUPPORTED -- ./work\n"
    "  cudatool replay a.trace --inject seq=44,status=0x56 --inject seq=88,errno=ENOMEM -- "
    "./work\n"
    "  cudatool replay a.trace -o replayed.trace -- ./work && cudatool ab a.trace "
    "replayed.trace\n"
    "  cudatool replay --bisect bare-metal.trace guest.trace -- ./work\n"
    "  cudatool replay a.trace --functions -o f.trace -- build/cuda_probe LIB ctx && cudatool "
    "decode f.trace --functions\n"
    "  cudatool replay a.trace --execute stop -- ./work kern.cubin\n"
    "The program runs unmodified (the real libcuda), with libcudatool_replay.so preloaded: its\n"
    "/dev/nvidia* calls are answered from TRACE (never the host's device nodes; nothing is\n"
    "created), its view of /proc/driver/nvidia and /sys comes from the trace, and a minimal\n"
    "fake GPU carries out channel work: semaphores, copies and fills (video memory is backed\n"
    "by the replay), and compute launches, completed without running the kernel (--execute\n"
    "none: the results are not the GPU's) and reported with the kernel's name, grid, block and\n"
    "parameters. A program that waits for what the fake GPU cannot do is stopped after\n"
    "--deadline and the report says where it waits. The report goes to stderr (stdout is the\n"
    "program's).\n"

    "Exit status (the verdict, not the program's: see --program-status): 0 every device call\n"
    "was answered in order from the recording and the program ended; 1 deviations (unrecorded,\n"
    "out-of-order, skipped calls), or the program was stopped or killed; 2 bad input: an\n"
    "unreadable trace, a bad --inject, a library of another driver version than the trace's.\n"
    "--bisect: 1 when a culprit set was found, 0 when not. See docs/replay.md.";

}  // namespace

void register_replay(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ReplayCliOptions>();
  auto* cmd = app.add_subcommand(
      "replay",
      "Run a program with its kernel-driver calls answered from a recorded trace (no GPU needed)");
  cmd->add_option(
         "--inject", o->injects,
         "change one recorded answer (repeatable): seq=N or cmd=/class=/call=NAME[,nth=K], "
         "then status=, member=PATH,value=, errno= or ret=")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      // One value per --inject: else CLI11 takes a "--" right after its value as the end of
      // the option's list and eats it, and a "--" inside CMD (cudatool trace -- PROG) is then
      // the one that ends the options.
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", o->output,
                  "write the replayed run as a trace (header mode \"replay\"), for cudatool ab");
  cmd->add_option("--deadline", o->deadline,
                  "stop the program after this many seconds without progress (0: never)")
      ->capture_default_str();
  cmd->add_option("--execute", o->execute,
                  "compute launches: none = completed without running the kernel (their "
                  "semaphores released, each reported); stop = the fake GPU stops at each, as a "
                  "GPU that never finishes")
      ->check(CLI::IsMember({"none", "stop"}))
      ->capture_default_str();
  add_force_flag(cmd, o->force);
  cmd->add_flag("--json", o->json, "print the report as JSON (schema cudatool.replay/1)");
  cmd->add_option("--report", o->report, "write the report to this file instead of stderr");
  cmd->add_flag("--program-status", o->program_status,
                "exit with the program's own status (128+N for signal N) instead of the verdict");
  cmd->add_option(
      "--bisect", o->bisect_good,
      "GOOD.trace (then BAD.trace as TRACE): find the smallest set of BAD's answers that makes the "
      "command fail as BAD failed");
  cmd->add_option("--fails-if", o->fails_if,
                  "--bisect: a try fails when a line of the program's output (stdout and "
                  "stderr) matches this regex, POSIX extended as grep -E (default: BAD's exit "
                  "status)");
  cmd->add_option("--functions", o->functions,
                  "record every call of libcuda's functions into the -o trace (function events: "
                  "entry, caller, return value, the device calls inside); GLOBS (comma-separated, "
                  "case-insensitive, '!' excludes; write --functions=GLOBS) select by cudatool's "
                  "names, all by default. The library planned is the libcuda.so* file CMD names, "
                  "else the system's libcuda.so.1")
      ->expected(0, 1)
      ->default_str("*");
  cmd->add_option("--functions-lib", o->functions_lib,
                  "--functions: the library whose functions are recorded (default: a libcuda.so* "
                  "file CMD names, else the system's libcuda.so.1)");
  cmd->add_option("--shim", o->shim,
                  "the replay shim (default: libcudatool_replay.so beside cudatool)");
  cmd->add_option("--keep", o->keep,
                  "work in DIR (new, or an empty directory) and leave the answer table, log and "
                  "environment tree there");
  cmd->add_flag("-q,--quiet", o->quiet, "print no report");
  cmd->add_flag("--no-crash-report", o->no_crash_report,
                "do not trace the command with ptrace (which names where a fatal signal hit it: "
                "the report's `crash`); leaves it free for a debugger to attach");
  cmd->add_flag("--aslr", o->aslr,
                "keep address-space layout randomisation for the command (by default replay turns "
                "it off, so that two replays of one recording place memory alike and libcuda takes "
                "the same paths where it hashes or orders by address: ab compares them closely)");
  // TRACE, then -- CMD [ARGS...] (CLI11 drops the "--"). --bisect takes GOOD.trace as its value,
  // so that `--bisect GOOD BAD -- CMD` leaves one trace positional.
  cmd->add_option("TRACE", o->trace, "the recording (BAD.trace with --bisect GOOD.trace)");
  cmd->add_option("CMD", o->command, "the command to run, after --")->take_all();
  cmd->footer(kReplayFooter);
  cmd->callback([o, exit_code] {
    // `--functions TRACE`: CLI11 gave the trace to --functions as its GLOBS.
    if (o->trace.empty() && !o->functions.empty() && o->functions.find('*') == std::string::npos &&
        access(o->functions.c_str(), R_OK) == 0) {
      o->trace = std::exchange(o->functions, "*");
    }
    o->bisect = !o->bisect_good.empty();
    if (o->bisect) o->args.push_back(o->bisect_good);
    if (!o->trace.empty()) o->args.push_back(o->trace);
    if (!o->command.empty()) o->args.emplace_back("--");
    o->args.insert(o->args.end(), o->command.begin(), o->command.end());
    *exit_code = run_replay_cmd(*o);
  });
}

}  // namespace cudatool::cli
