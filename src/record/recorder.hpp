// The recorders behind `cudatool trace`: ptrace + seccomp (complete; follows threads, forks and
// execs; can attach to a running process) and the LD_PRELOAD shim (fast; sees what goes through
// libc). Both write the trace format of docs/trace-format.md through a TraceWriter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "record/crash.hpp"
#include "record/function_recorder.hpp"
#include "trace/event.hpp"
#include "trace/trace_file.hpp"

namespace cudatool::record {

// The recorders produce the trace layer's model (trace/event.hpp) through its writer.
using trace::Buffer;
using trace::Event;
using trace::Header;
using trace::Sys;
using trace::TraceWriter;
using trace::Trailer;

struct RecordOptions {
  std::vector<std::string> argv;  // the command to run (launch mode)
  int attach_pid = 0;             // --pid: attach to a running process instead (ptrace only)
  std::string devices;            // comma-separated globs of device paths to record
  // Comma-separated globs of the environment paths whose calls are recorded (stat, opens with
  // the content read, mknod, …: docs/trace-format.md); "" records none.
  std::string env;
  // CPU placement (ptrace): "same" pins recorder and traced program to the CPU the recorder
  // starts on; "any" leaves both where the scheduler puts them; a number pins both to that CPU.
  std::string cpu = "same";
  uint64_t max_buffer = 16u << 20;  // largest buffer read; larger ones are recorded unreadable
  std::string preload_lib;          // the shim (preload mode); found next to cudatool when empty
  // Preload mode: read the trace back at the end for the per-kind and per-device counts of the
  // summary (the shims do not count them). Off with -q.
  bool count_events = true;
  // v2: record each device call's user-space stack and the module records that resolve it
  // (--no-stacks turns it off: header `stacks` false, no module lines).
  bool stacks = true;
  // --functions GLOBS: every call of the selected libcuda functions, as function
  // events in the trace (record/function_recorder.hpp; ptrace mode preloads the recorder and
  // places the device calls it sees among them by time); "" records none.
  std::string functions;
  std::string functions_lib;  // the library to plan ("" the libcuda CMD names, or the system's)
  // Preload mode: trace the command with ptrace for a crash report (crash.hpp); ptrace mode
  // always reads a fatal signal.
  bool crash_report = true;
};

struct RecordSummary {
  uint64_t events = 0;
  std::map<std::string, uint64_t> by_sys;   // "ioctl" -> n
  std::map<std::string, uint64_t> by_path;  // device path -> events on it
  uint64_t processes = 0;                   // processes seen (the command and its children)
  // Device calls (open/ioctl/mmap/… of device paths, not environment events), of them those
  // with a call stack and those whose stack was cut short; what could not be recorded, by what
  // ("params", "params.grInfoList", …) and the first reason given.
  uint64_t device_calls = 0, with_stack = 0, stacks_cut = 0;
  std::map<std::string, std::pair<uint64_t, std::string>> unrecorded;
  uint64_t threads = 0;
  Trailer trailer;  // as written: reason, exit status, routes
  // What cudatool should exit with: the command's exit status, 128 + signal when a signal killed
  // it, 130/143 when the recording was interrupted.
  int exit_code = 0;
  int term_signal = 0;  // the signal that killed the command, 0 if it exited
  std::string placement;
  FunctionOutcome functions;  // --functions: what was planned and written
  // A fatal signal reached the command (crash.hpp), resolved; its summary is in the trailer.
  // crash_note: why there can be no crash report (ptrace refused), "" normally.
  std::optional<CrashReport> crash;
  std::string crash_note;
  // A problem to report that did not stop the recording from producing a valid trace (the
  // command could not be run: exit_code is then 127 or 126, as in shells).
  std::string error;
};

// Header fields every recorder fills the same way: format version, argv, driver version (from
// /proc/driver/nvidia/version when readable), host, kernel, start time, recorder.
// Adds one recorded event to the summary's counts (both recorders).
void count_event(RecordSummary& s, const Event& ev);

Header make_header(const std::vector<std::string>& argv, const std::string& mode,
                   const std::string& devices);

// A crash the recorder caught: when fatal (it ended the command), resolved into sum.crash and
// the trailer's summary; else dropped (a handler of the program recovered from it).
void keep_crash(std::optional<CrashReport> crash, RecordSummary& sum);

// Runs options.argv (or attaches to options.attach_pid) under ptrace and records it into `out`.
// Errors: the command cannot be started, ptrace is not permitted, the pid does not exist.
Result<RecordSummary> record_ptrace(const RecordOptions& options, TraceWriter& out);

// Runs options.argv with the preload shim and writes the trace to `out_path` (the shim writes the
// events; this process writes header and trailer).
Result<RecordSummary> record_preload(const RecordOptions& options, const std::string& out_path);

// The CPU to pin to for options.cpu ("same", "any", "N"): -1 for no pinning; an error for a CPU
// this process may not run on.
Result<int> choose_cpu(const std::string& spec);

}  // namespace cudatool::record
