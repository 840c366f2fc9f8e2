// One replay: a command run with the replay shim preloaded, its device calls answered from a
// recorded trace (docs/replay.md). Builds the answer table and the environment in a private
// directory, starts the command, watches its progress (a run that makes no progress for
// `deadline_s` is stopped and inspected), and reads the shims' log back into a report and,
// with `output`, a replayed trace.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "record/crash.hpp"
#include "record/function_recorder.hpp"
#include "replay/answers.hpp"
#include "replay/inject.hpp"
#include "replay/kernels.hpp"
#include "replay/replay_log.hpp"

namespace cudatool::replay {

struct ReplayOptions {
  std::vector<std::string> argv;
  std::vector<Injection> injections;
  std::vector<AnswerOverride> overrides;  // answers of another recording (bisect)
  std::string output;                     // -o: the replayed trace ("" none)
  double deadline_s = 10;                 // stop after this long without progress (0: never)
  std::string shim;                       // libcudatool_replay.so ("" beside cudatool)
  bool capture_output = false;            // collect the program's stdout+stderr (bisect --fails-if)
  bool quiet_program = false;             // send the program's stdout/stderr to /dev/null
  std::string keep_dir;                   // keep the run's files here (debugging); "" removes them
  std::string work_dir;                   // the command's working directory ("" ours): explore's
  double time_limit_s = 0;                // stop after this long in all (0: never): explore
  std::function<bool()> stop;             // true ends the run at once (explore's Ctrl-C)
  std::string functions;         // --functions GLOBS: libcuda's function calls into -o ("" none)
  std::string functions_lib;     // --functions-lib: the library to plan ("" as CMD names it)
  bool crash_report = true;      // trace the command for a crash report (record::LaunchSpec)
  bool fixed_layout = true;      // ASLR off for the command (record::LaunchSpec); --aslr keeps it
  std::string execute = "none";  // compute launches: "none" completes, "stop" stops
};

enum class Outcome : uint8_t {
  kAnswered,      // in order
  kOutOfOrder,    // by a recorded call before the thread's position
  kFreelike,      // unrecorded free/unmap/close: succeeded
  kTwin,          // unrecorded control: the nearest twin's answer
  kNotSupported,  // unrecorded: NV_ERR_NOT_SUPPORTED / EOPNOTSUPP
  kNoDevice,      // a device path the recording never opened: ENOENT
  kPassed,        // unrecorded open/mmap/dup of a replay device: carried out
};
std::string_view outcome_name(Outcome o);

// How a replay departed from the recording (Deviation::kind).
enum class DeviationKind : uint8_t {
  kOutOfOrder,  // a recorded call answered out of its place
  kUnrecorded,  // a call the recording does not hold
  kSkipped,     // recorded calls the program did not make, among ones it did
  kNotReached,  // recorded calls after the last one the program made in that role
};
// "out_of_order", "unrecorded", "skipped", "not_reached" (the JSON's `kind`).
std::string_view deviation_kind_name(DeviationKind k);

struct Deviation {
  DeviationKind kind = DeviationKind::kUnrecorded;
  Outcome outcome = Outcome::kAnswered;
  std::optional<uint64_t> replay_seq;    // in the replayed run
  std::optional<uint64_t> recorded_seq;  // the recorded call (answering, or skipped: the first)
  uint64_t count = 1;                    // skipped / not reached: recorded calls in the run
  std::string what;                      // the call, decoded
  std::string call;                      // its name: "close", "NV_ESC_RM_CONTROL NV2080_…"
  std::string answer;                    // what it was answered with
};

struct ThreadStop {
  int tid = 0;
  uint64_t pc = 0;
  std::string module;       // the mapped file the pc (or the libcuda frame) lies in
  uint64_t offset = 0;      // from its load base
  std::string function;     // fn_… / a name, for libcuda frames
  bool from_stack = false;  // the libcuda frame was found on the stack, pc lies elsewhere
};

struct Stall {
  double idle_s = 0;  // without progress when stopped
  std::vector<ThreadStop> threads;
  std::vector<rp_wait> waits;  // semaphores the fake GPU could not release
  std::string message;         // "libcuda waits at libcuda+0x… (fn_…) for the semaphore at …"
};

// A compute launch the fake GPU completed without executing it (RP_LOG_LAUNCH), with its kernel
// named by its code among the CUDA images the program opened (kernels.hpp).
struct LaunchRecord {
  uint64_t seq = 0;  // in the log's order of replayed calls
  uint64_t t_ns = 0;
  int pid = 0;
  rp_log_launch launch{};
  std::vector<uint8_t> code, cb0;  // as the fake GPU read them
  std::optional<KernelMatch> kernel;
  std::vector<LaunchParam> params;  // cut from cb0 by the kernel's layout
};

// How a replayed program ended (ReplayReport::end).
enum class ReplayEnd : uint8_t {
  kExit,       // it exited by itself
  kSignal,     // a signal killed it
  kDeadline,   // stopped: no progress for --deadline seconds
  kTimeLimit,  // stopped: longer than the time limit in all
  kStopped,    // stopped on request (Ctrl-C of explore)
  kRefused,    // the shim refused to answer (a libcuda of another driver version)
};
// "exit", "signal", "deadline", "time_limit", "stopped", "refused" (the JSON's `end`).
std::string_view replay_end_name(ReplayEnd e);

struct ReplayReport {
  std::string trace;
  std::vector<std::string> argv;
  std::string driver_version;
  std::string libcuda_version;       // a trace without driver_version: its module records' libcuda
  uint64_t recorded_calls = 0;       // device calls in the answer table
  uint64_t answered = 0;             // of them, answered (at least once)
  std::vector<uint32_t> unanswered;  // trace indices of the recorded calls never answered
  uint64_t replayed_calls = 0;       // device calls the program made
  uint64_t by_outcome[7] = {};
  uint64_t env_calls = 0;  // environment calls answered or redirected
  std::vector<Deviation> deviations;
  std::vector<std::string> synthesized, gaps, injected;
  std::string environment;  // "recorded" | "defaults (…)"
  ReplayEnd end = ReplayEnd::kExit;
  int exit_status = 0;  // of the program (exit code, or -signal)
  std::optional<Stall> stall;
  // A fatal signal ended the program (record/crash.hpp), resolved; crash_note: why there can be
  // no crash report (ptrace refused), "" normally.
  std::optional<record::CrashReport> crash;
  std::string crash_note;
  std::string refusal;  // why the shim refused (another driver's library)
  uint64_t processes = 0;
  uint64_t gpu_entries = 0, gpu_releases = 0;
  uint64_t gpu_maps = 0, gpu_maps_known = 0;  // RM device mmaps; those tied to a memory object
  uint64_t gpu_launches = 0;                  // compute launches the fake GPU came to
  std::string execute = "none";               // --execute: "none" (completed) or "stop"
  rp_compute_stats compute{};                 // the compute engines' figures
  rp_vidmem_stats vidmem{};                   // video memory backed
  std::vector<LaunchRecord> launches;         // completed, in order
  std::vector<std::string> images;            // CUDA image files the program opened
  // Channels whose work the fake GPU left undone when the run ended, and what each means.
  struct Unfinished {
    rp_channel_state channel;
    std::string message;  // "channel 0x5c00004e (class 0xc86f): 3 GPFIFO entries not carried out …"
  };
  std::vector<Unfinished> unfinished;
  uint64_t log_lost = 0;
  std::string output;                 // the replayed trace written
  record::FunctionOutcome functions;  // --functions: what was planned and written
  std::string program_output;         // capture_output
  double wall_s = 0;
  int verdict = 0;  // 0 faithful, 1 findings (deviations, stopped), 2 refused / not run
};

// One launch in a line: "add1 grid 1024x1x1 block 256x1x1 shared 0 B (params 0x…, 0x40000) …".
std::string launch_line(const LaunchRecord& l);

// The name of a host semaphore acquire operation (clc86f.h / clc56f.h SEM_EXECUTE_OPERATION).
std::string_view acquire_op_name(uint32_t op);

// Runs one replay of `rec` (already loaded). Errors: the shim is missing, the files cannot be
// written, an injection does not apply, the command cannot be started.
Result<ReplayReport> run_replay(const Recording& rec, const ReplayOptions& options);

// The replayed calls as a trace (header mode "replay", source = the recording).
// With `functions` (--functions), the function events follow the calls, their device marks
// numbered as the trace numbers the calls, and what was written goes into *fn_out.
Status write_replayed_trace(const Recording& rec, const AnswerTable& table, const ReplayLog& log,
                            const ReplayReport& report, const std::string& path,
                            record::FunctionRecorder* functions = nullptr,
                            record::FunctionOutcome* fn_out = nullptr);

}  // namespace cudatool::replay
