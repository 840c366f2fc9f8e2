// cudatool trace: record what a program asks of the NVIDIA kernel driver.
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>

#include "base/glob_check.hpp"
#include "base/json_writer.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/crash_output.hpp"
#include "cli/function_summary_output.hpp"
#include "record/dev_nodes.hpp"
#include "record/devices.hpp"
#include "record/recorder.hpp"
#include "record/shim_abi/replay_abi.h"
#include "trace/trace_file.hpp"

namespace cudatool::cli {
namespace {

struct TraceOptions {
  std::string output = "trace.jsonl";
  std::string mode = "ptrace";
  bool mode_given = false;  // --mode on the command line (else ptrace, or preload under replay)
  std::string devices = std::string(record::kDefaultDevices);
  std::string env = std::string(record::kDefaultEnv);
  std::string cpu = "same";
  uint64_t max_buffer = 16u << 20;
  std::string preload_lib;
  int pid = 0;
  bool json = false;
  bool quiet = false;
  bool no_stacks = false;
  bool force = false;
  std::string functions;  // --functions[=GLOBS]; "" not given
  std::string functions_lib;
  bool no_crash_report = false;
  std::vector<std::string> command;
};

using NewNodes = std::vector<std::pair<std::string, record::DevNode>>;

std::string node_text(const std::pair<std::string, record::DevNode>& n) {
  return fmt::format("{} ({} {}:{})", n.first, n.second.block ? "block" : "char", n.second.major,
                     n.second.minor);
}

// Says that device nodes appeared in the machine's /dev while the program ran (made by it, as a
// rule: nothing else is watched), that they stay, and how to avoid it.
void warn_new_nodes(const NewNodes& nodes) {
  if (nodes.empty()) return;
  std::string list, paths;
  for (const auto& n : nodes) {
    list += (list.empty() ? "" : ", ") + node_text(n);
    paths += " " + n.first;
  }
  fmt::print(
      stderr,
      "cudatool: warning: device nodes appeared in this machine's /dev while the program "
      "ran, and they stay: {}. Remove them (rm{}), and record a program that makes nodes (as "
      "libcuda does as root without the NVIDIA driver) with its own /dev: "
      "tools/private-dev.sh cudatool trace … (docs/tracing.md)\n",
      list, paths);
}

// The device calls of a program under `cudatool replay` are answered inside it by the replay
// shim and never reach the kernel, so ptrace mode would record none of them.
bool under_replay() {
  return std::getenv(RP_ENV_TABLE) != nullptr;
}

std::string render_text(const TraceOptions& o, const record::RecordSummary& s) {
  std::string out = fmt::format("cudatool: {} events to {} ({} mode, {})\n", s.events, o.output,
                                o.mode, s.placement);
  std::string kinds;
  for (const auto& [k, n] : s.by_sys) kinds += fmt::format("  {} {}", k, n);
  if (!kinds.empty()) out += fmt::format("cudatool:  by kind:{}\n", kinds);
  for (const auto& [p, n] : s.by_path) out += fmt::format("cudatool:  {:>8}  {}\n", n, p);
  if (!s.trailer.routes.empty()) {
    std::string routes;
    for (const auto& [r, n] : s.trailer.routes) routes += fmt::format("  {}() {}", r, n);
    out += fmt::format("cudatool:  device ioctls by route:{}\n", routes);
  }
  if (o.no_stacks) {
    out += "cudatool:  call stacks: not recorded (--no-stacks)\n";
  } else if (s.device_calls != 0) {
    out += fmt::format(
        "cudatool:  call stacks: {} of {} device calls{}\n", s.with_stack, s.device_calls,
        s.stacks_cut == 0 ? "" : fmt::format(" ({} cut short: `decode` says where)", s.stacks_cut));
  }
  for (const auto& [what, n_why] : s.unrecorded) {
    out += fmt::format("cudatool:  not recorded: {} of {} call{} ({}{})\n", what, n_why.first,
                       n_why.first == 1 ? "" : "s", n_why.second,
                       n_why.first == 1 ? "" : ", the first");
  }
  if (s.trailer.lost != 0) {
    out += fmt::format(
        "cudatool:  {} device calls were not recorded (made from a signal handler "
        "that interrupted the recorder)\n",
        s.trailer.lost);
  }
  out += function_outcome_text(s.functions, "cudatool:  ");
  if (s.trailer.reason == "detached") {
    out += "cudatool:  detached; the process runs on\n";
  } else if (s.trailer.reason == "interrupted") {
    out += "cudatool:  interrupted: the traced processes were killed\n";
  } else if (s.term_signal != 0) {
    out += fmt::format("cudatool:  the command was killed by signal {} ({})\n", s.term_signal,
                       strsignal(s.term_signal));
  } else {
    out += fmt::format("cudatool:  the command exited with status {}\n",
                       s.trailer.exit_status.value_or(0));
  }
  if (s.crash) out += "cudatool: " + crash_text(*s.crash, "made");
  if (!s.crash_note.empty()) out += "cudatool:  " + s.crash_note + "\n";
  return out;
}

std::string render_json(const TraceOptions& o, const record::RecordSummary& s,
                        const NewNodes& nodes) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.kv("schema", "cudatool.trace/1").kv("output", o.output).kv("mode", o.mode);
  w.kv("placement", s.placement).kv("devices", o.devices).kv("events", s.events);
  w.kv_or_null("env", o.env == "none" ? std::string() : o.env);
  w.key("by_sys").begin_object();
  for (const auto& [k, n] : s.by_sys) w.kv(k, n);
  w.end_object();
  w.key("by_path").begin_object();
  for (const auto& [p, n] : s.by_path) w.kv(p, n);
  w.end_object();
  w.key("routes").begin_object();
  for (const auto& [r, n] : s.trailer.routes) w.kv(r, n);
  w.end_object();
  w.kv("device_calls", s.device_calls).kv("with_stack", s.with_stack);
  w.kv("stacks_cut", s.stacks_cut);
  w.key("unrecorded").begin_object();
  for (const auto& [what, n_why] : s.unrecorded) {
    w.key(what).begin_object().kv("calls", n_why.first).kv("first_reason", n_why.second);
    w.end_object();
  }
  w.end_object();
  w.kv("lost", s.trailer.lost).kv("reason", s.trailer.reason);
  w.kv("exit_status", s.trailer.exit_status.value_or(0)).kv("exit_code", s.exit_code);
  write_function_outcome_json(w, s.functions);
  w.key("created_device_nodes").begin_array();
  for (const auto& n : nodes) w.value(node_text(n));
  w.end_array();
  if (s.error.empty()) {
    w.key("error").null();
  } else {
    w.kv("error", s.error);
  }
  write_crash_json(w, s.crash, s.crash_note);
  w.end_object();
  w.finish();
  return out;
}

int run_trace(TraceOptions& o) {
  if (o.pid != 0 && !o.command.empty()) {
    print_error("trace: give either a command (after --) or --pid, not both");
    return kExitBadInput;
  }
  if (o.pid == 0 && o.command.empty()) {
    print_error("trace: no command to trace: cudatool trace [-o FILE] -- CMD [ARGS...]");
    return kExitBadInput;
  }
  if (!o.command.empty() && o.command[0] == "--") o.command.erase(o.command.begin());
  if (o.mode != "ptrace" && o.mode != "preload") {
    print_error(fmt::format("trace: --mode {}: expected ptrace or preload", o.mode));
    return kExitBadInput;
  }
  if (!o.functions.empty() && o.pid != 0) {
    print_error(
        "trace: --functions cannot be used with --pid (the function recorder is loaded into the "
        "program when it starts)");
    return kExitBadInput;
  }
  if (o.pid == 0 && under_replay() && o.mode == "ptrace") {
    if (o.mode_given) {
      fmt::print(stderr,
                 "cudatool: warning: under `cudatool replay` the device calls are answered inside "
                 "the program and never reach the kernel: ptrace mode records none of them; "
                 "--mode preload records them\n");
    } else {
      o.mode = "preload";
      fmt::print(stderr,
                 "cudatool: note: under `cudatool replay` the device calls are answered inside "
                 "the program and never reach the kernel, where ptrace mode would see them: "
                 "recording in preload mode\n");
    }
  }
  for (const auto& [option, globs] :
       {std::pair{"--devices", &o.devices}, std::pair{"--env", &o.env}}) {
    if (*globs == "none" || globs->empty()) continue;
    if (auto why = glob_list_problem(*globs)) {
      print_error(fmt::format("trace: {} {}: not a glob: {}", option, *globs, *why));
      return kExitBadInput;
    }
    std::error_code ec;
    std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (!ec) *globs = absolute_glob_list(*globs, cwd.string());
  }
  if (!usable_output("-o", o.output, {}, OutputKind::kTrace, o.force)) return kExitBadInput;
  if (o.mode == "preload" && o.pid != 0) {
    print_error("trace: --pid needs --mode ptrace (a running process cannot load the shim)");
    return kExitBadInput;
  }
  record::RecordOptions ro;
  ro.argv = o.command;
  ro.attach_pid = o.pid;
  ro.devices = o.devices;
  ro.env = o.env == "none" ? std::string() : o.env;
  ro.cpu = o.cpu;
  ro.max_buffer = o.max_buffer;
  ro.preload_lib = o.preload_lib;
  ro.count_events = !o.quiet;
  ro.stacks = !o.no_stacks;
  ro.functions = o.functions;
  ro.functions_lib = o.functions_lib;
  auto nodes_before = record::device_nodes("/dev");
  ro.crash_report = !o.no_crash_report;
  Result<record::RecordSummary> sum = Error{};
  if (o.mode == "preload") {
    sum = record::record_preload(ro, o.output);
  } else {
    if (auto c = record::choose_cpu(o.cpu); !c) {
      print_error(c.error());
      return kExitBadInput;
    }
    auto w = trace::TraceWriter::create(o.output);
    if (!w) {
      print_error(w.error());
      return kExitBadInput;
    }
    sum = record::record_ptrace(ro, **w);
  }
  if (!sum) {
    print_error(sum.error());
    return kExitBadInput;
  }
  if (!sum->error.empty()) print_error(sum->error);
  NewNodes nodes;
  for (auto& n : record::new_device_nodes(nodes_before, record::device_nodes("/dev"))) {
    if (record::seen_by_ancestors(n.first)) nodes.push_back(std::move(n));
  }
  warn_new_nodes(nodes);
  if (sum->crash) record::set_last_call(*sum->crash, o.output);
  if (!o.quiet) {
    std::string text = o.json ? render_json(o, *sum, nodes) : render_text(o, *sum);
    (void)!write(STDERR_FILENO, text.data(), text.size());
  }
  return sum->exit_code;
}

}  // namespace

void register_trace(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TraceOptions>();
  auto* cmd = app.add_subcommand(
      "trace", "Record every call a program makes on /dev/nvidia* (ioctl, open, mmap, …)");
  cmd->add_option("-o,--output", o->output,
                  "trace file to write (JSON lines; zstd-compressed when it ends in .zst)")
      ->capture_default_str();
  auto* mode = cmd->add_option("--mode", o->mode,
                               "ptrace: complete (threads, forks, execs, raw syscalls); preload: "
                               "an LD_PRELOAD shim, fastest, sees what goes through libc (the "
                               "default under cudatool replay, whose answers never reach the "
                               "kernel)")
                   ->capture_default_str();
  cmd->add_option("--devices", o->devices,
                  "comma-separated globs of the device paths to record ('*' matches '/' too; a "
                  "relative glob is taken from the current directory)")
      ->capture_default_str();
  cmd->add_option(
         "--env", o->env,
         "comma-separated globs of the environment paths whose stat, open (with the "
         "content read), mknod, symlink, readlink, chmod and unlink are recorded "
         "('*' matches '/' too; a relative glob is taken from the current directory); none: "
         "record none")
      ->capture_default_str();
  cmd->add_option("--cpu", o->cpu,
                  "ptrace placement: same (recorder and program on the CPU cudatool starts on), "
                  "any (no pinning), or a CPU number")
      ->capture_default_str();
  cmd->add_option("--max-buffer", o->max_buffer,
                  "largest argument or nested buffer read, in bytes; larger ones are recorded "
                  "as unreadable")
      ->capture_default_str();
  cmd->add_option("--preload-lib", o->preload_lib,
                  "the shim for --mode preload (default: libcudatool_preload.so beside cudatool)");
  cmd->add_option("--pid", o->pid, "attach to this running process instead (ptrace mode)");
  add_force_flag(cmd, o->force);
  cmd->add_flag("--json", o->json,
                "print the end summary as JSON (schema cudatool.trace/1) on stderr; stdout "
                "belongs to the traced command");
  cmd->add_flag("-q,--quiet", o->quiet, "print no summary");
  cmd->add_flag("--no-stacks", o->no_stacks,
                "record no call stacks (each device call carries its stack and the trace its "
                "module map by default: ptrace mode unwinds with libdw, preload mode in process "
                "from .eh_frame; each distinct stack is written once, later events name it)");
  cmd->add_option(
         "--functions", o->functions,
         "also record every call of libcuda's functions (entry, caller, return value, "
         "the device calls inside) as function events; GLOBS (comma-separated, "
         "case-insensitive, '!' excludes) select by cudatool's names (exports, *.impl, "
         "export-table slots, fn_<addr>); all by default. Both modes (ptrace mode preloads "
         "libcudatool_funcrec.so); not with --pid. When the library's function map "
         "cannot be read the trace goes on without them")
      ->expected(0, 1)
      ->default_str("*");
  cmd->add_option("--functions-lib", o->functions_lib,
                  "--functions: the library whose functions are recorded (default: a libcuda.so* "
                  "file the command names, else the system's libcuda.so.1)");
  cmd->add_flag("--no-crash-report", o->no_crash_report,
                "preload mode: do not trace the command with ptrace (which names where a fatal "
                "signal hit it: the summary's `crash`); leaves it free for a debugger");
  cmd->add_option("CMD", o->command, "the command to run and trace, after --")->take_all();
  cmd->positionals_at_end();
  cmd->footer(
      "Examples:\n"
      "  cudatool trace -o run.jsonl -- ./work kern.cubin\n"
      "  cudatool trace --mode preload -o run.jsonl.zst -- python3 train.py\n"
      "  cudatool trace -o attached.jsonl --pid 12345        # Ctrl-C detaches\n"
      "  cudatool trace --devices '/dev/nvidia*,/tmp/fake/*' -- ./test-program\n"
      "  cudatool trace --no-stacks -o run.jsonl -- ./work kern.cubin   # no call stacks\n"
      "  cudatool decode run.jsonl --stacks                  # the stacks, by function name\n"
      "  cudatool trace --env '/tmp/fake-sys/*' -- ./test-program   # a fake /sys tree\n"
      "  cudatool trace --env none -- ./work kern.cubin          # device calls only\n"
      "  cudatool trace --functions -o f.jsonl -- ./work kern.cubin   # + libcuda's calls\n"
      "  cudatool decode f.jsonl --functions api=cuInit          # the call tree of cuInit\n"
      "The trace (docs/trace-format.md) is written as calls complete, so a crash or kill of the\n"
      "program or of cudatool loses nothing already recorded. Exit status: the command's own\n"
      "(128+N when signal N killed it; 127/126 when it could not be run); 2 when tracing could\n"
      "not start. The first Ctrl-C/SIGTERM goes to the command; a second one ends the trace and\n"
      "kills the command (with --pid: detaches). See docs/tracing.md.");
  cmd->callback([o, exit_code, mode] {
    o->mode_given = mode->count() > 0;
    *exit_code = run_trace(*o);
  });
}

}  // namespace cudatool::cli
