// Crash reports (docs/tracing.md and docs/replay.md, "Crash reports"): what a traced or replayed
// program was doing when a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) reached it.
//
// How: the recorder or launcher traces the program with ptrace (launch.hpp's
// LaunchSpec::catch_crashes; the ptrace recorder is a tracer anyway). At the signal-delivery-stop
// of a fatal signal, before any handler of the program (libcuda installs its own) runs,
// capture_crash reads siginfo, registers and the thread's stack (unwound by libdwfl from the
// .eh_frame of the mapped files, as ptrace mode's call stacks are: ptrace_stacks.hpp); the signal
// then goes on to the program. resolve_crash names the frames with the project's one naming
// source (trace::StackResolver: exports, `*.impl`, `fn_<addr>`) and the API call in progress;
// set_last_call names the last device call of the faulting thread from the run's trace.
//
// For other code that classifies runs by how they crashed (`explore`, `replay --bisect`):
//
//   if (report.crash && report.crash->fatal())
//     key = report.crash->signature();   // "SIGSEGV in fn_2a3b00": signal and function
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event.hpp"
#include "trace/stack_resolver.hpp"

namespace cudatool::trace {
class TraceReader;
}

namespace cudatool::record {

// SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT.
bool is_crash_signal(int sig);
// "SIGSEGV"; "signal 42" for one without a name here.
std::string signal_name(int sig);
// "SEGV_MAPERR", "BUS_ADRALN", "SI_TKILL" …; "" when unknown.
std::string_view si_code_name(int sig, int code);

struct CrashFrame {
  uint64_t addr = 0;
  std::string module;    // file name of the object that holds addr ("libcuda.so.1"); "" none
  uint64_t offset = 0;   // addr - its load base (an ELF virtual address of the file)
  std::string function;  // cudatool's name: "cuInit", "cuInit.impl", "fn_2a3b00"; "" unknown
  uint64_t function_offset = 0;
  [[nodiscard]] std::string where() const;  // "libcuda.so.1+0x2a3b47", or "0x…" when unmapped
  [[nodiscard]] std::string name() const;   // "fn_2a3b00+0x47", or where() when unnamed
};

struct CrashReport {
  // Captured at the signal-delivery-stop.
  int signal = 0;
  int si_code = 0;
  bool sent = false;   // si_code <= 0: sent by kill/tgkill/raise/abort, not raised by a fault
  int sender_pid = 0;  // sent: by whom
  std::optional<uint64_t> fault_addr;  // si_addr of a fault (SIGSEGV/SIGBUS/SIGILL/SIGFPE)
  int pid = 0, tid = 0;
  std::string thread_name;  // /proc/TID/comm
  uint64_t pc = 0, sp = 0;
  std::vector<uint64_t> stack;         // pc first, then return addresses
  std::string stack_error;             // why the unwinding stopped early ("" it reached the end)
  std::vector<trace::Module> modules;  // what the process had mapped
  // The program had a handler of its own for the signal (SigCgt of /proc/PID/status): the
  // signal was delivered to it after the capture (libcuda installs handlers).
  bool handler = false;
  // Resolved (resolve_crash).
  std::vector<CrashFrame> frames;              // innermost first
  std::string api;                             // the CUDA API call in progress ("" unknown)
  std::vector<std::string> libraries_unnamed;  // "path: why" of modules without names
  // The last device call of the faulting thread (set_last_call): made (trace) or answered
  // (replay).
  std::optional<uint64_t> last_call_seq;
  std::string last_call;  // decoded
  // Function events since the last device call (set_functions_since); `functions_recorded`
  // says whether the run had them (false: the list is unknown, not empty).
  bool functions_recorded = false;
  std::vector<std::string> functions_since;
  // How the program ended: its exit status, or -signal.
  int exit_status = 0;

  // The signal ended the program (or its handler made it exit with a failure): a crash.
  [[nodiscard]] bool fatal() const { return exit_status != 0; }
  // The function the pc lies in (cudatool's name), else the pc's module+offset.
  [[nodiscard]] std::string function() const;
  // "SIGSEGV in fn_2a3b00": what two crashes share when they are the same crash.
  [[nodiscard]] std::string signature() const;
};

// Reads the crash of thread `tid`, a tracee of this thread in the signal-delivery-stop of `sig`.
// Never fails: what cannot be read is left empty (stack_error says why the stack is short).
CrashReport capture_crash(int tid, int sig);

// Names the frames and the API call in progress.
void resolve_crash(CrashReport& c, trace::ResolverOptions options = {});

// The last device call (not an environment event) of c.tid in the trace at `path`, decoded, and
// the functions entered since (set_functions_since). Reads the whole trace; an unreadable trace
// leaves the fields empty.
void set_last_call(CrashReport& c, const std::string& path);
// With function events in the trace at `path` (trace/replay --functions): functions_recorded,
// and functions_since: the calls c.tid entered after its last device call (c.last_call_seq; all
// of the thread's without one), named as decode --functions names them, each with its return
// value or "(open)" (still running when the signal came: the crash's own stack), the last
// kMaxFunctionsSince of them after a line saying how many came before. Where the stack named no
// API call, `api` becomes the thread's outermost call still open.
void set_functions_since(CrashReport& c, const std::string& path);
inline constexpr size_t kMaxFunctionsSince = 32;

// One line for the trailer of a trace (trace::CrashSummary).
trace::CrashSummary crash_summary(const CrashReport& c);

}  // namespace cudatool::record
