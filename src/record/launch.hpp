// Starting a command under a preload shim, and waiting for it: one launcher for `trace --mode
// preload` (record/preload_launcher.cpp) and `replay` (replay/session.cpp), made so that
// `explore` can run many replays at once (issue #33).
//
// What it does:
//   - finds the shim: a path given by the user (made absolute: the command may change its
//     directory), else the file beside this executable;
//   - starts the command (argv[0] looked up in PATH) with the shim first in LD_PRELOAD and the
//     shim's environment variables, its output inherited, discarded or captured, in its own
//     process group or in ours, in a directory of its own or ours;
//   - says when exec failed (the exec-error pipe: a command that cannot run is an error of its
//     own, not an exit status 127);
//   - keeps this process a child subreaper while launches run, so that descendants that outlive
//     the command are reparented here and waited for;
//   - waits: for every process of the launch, watching it as the caller says (a deadline, a
//     progress check, a stop request such as a Ctrl-C seen by record::RecorderSignals), ending
//     it with SIGKILL when told to.
//
// Parallel launches: each in its own process group (LaunchSpec::own_group) is waited for by
// that group alone (waitpid(-pgid)), so launches in several threads do not reap each other's
// processes; the subreaper setting is counted; the child between fork and exec calls only
// async-signal-safe functions (its argv and environment are built before fork); one launch at a
// time makes its pipes and closes its own write ends, so that no child inherits an end another
// launch waits on (two traced children held before exec once waited for each other for ever). A
// Child that is destroyed while its command runs kills it (the group, when it has its own) and
// reaps it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "record/crash.hpp"

namespace cudatool::record {

// The directory of this executable (/proc/self/exe), "." when it cannot be read.
std::string self_dir();
// `p` against the working directory (unchanged when absolute, or when that cannot be read).
std::string absolute_path(const std::string& p);

// The shim a command runs with: `given` made absolute, else `file` beside this executable. Not
// readable: an error of `structure` ("trace", "replay") naming `what` and the `option` that
// names another ("preload shim /x/libcudatool_preload.so not found (…); pass --preload-lib").
Result<std::string> find_shim(const std::string& given, std::string_view file,
                              std::string_view structure, std::string_view what,
                              std::string_view option);

enum class ChildOutput : uint8_t {
  kInherit,  // this process's stdout and stderr
  kDiscard,  // /dev/null
  kCapture,  // one pipe for both, read by Child::pump_output (up to 16 MiB kept)
};

struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string preload;            // a shim put first in LD_PRELOAD ("" none)
  std::vector<std::pair<std::string, std::string>> set_env;  // set, replacing
  std::vector<std::string> unset_env;                        // removed
  std::string dir;  // working directory ("" this process's): explore's private one per run
  // Its own process group: a terminal's signals do not reach it, Child::kill ends the whole
  // group, and Child::reap waits for the group alone (parallel launches).
  bool own_group = false;
  ChildOutput output = ChildOutput::kInherit;
  // Crash reports (crash.hpp): the command is traced (PTRACE_SEIZE before its exec, following
  // its threads, forks and execs) and the first fatal signal that reaches one of its threads is
  // captured before the program's own handler runs. The launch must then be started and waited
  // for by one thread (ptrace requests come from the tracer thread). When ptrace is refused the
  // command runs untraced and Child::crash_note says why.
  bool catch_crashes = false;
  // Address-space layout randomisation off for the command and what it starts
  // (personality ADDR_NO_RANDOMIZE; ignored where refused): replay's runs then place the stack,
  // libraries and heap alike, and libcuda's paths that depend on addresses (hash tables keyed by
  // pointers, memory pools) are the same in two replays.
  bool fixed_layout = false;
};

// The command's environment: this process's, with spec's changes applied as setenv and unsetenv
// would (a variable set that exists keeps its place, a new one goes last), LD_PRELOAD first.
std::vector<std::string> child_environment(const LaunchSpec& spec);

// How Child::wait watches a launch.
struct Watch {
  // 0: sleep in waitpid until a process ends or a signal arrives (end_now is looked at then);
  // > 0: look every poll_ms milliseconds (deadlines, progress, captured output).
  int poll_ms = 0;
  // Looked at while the command runs: true ends the launch (SIGKILL): a stall, a stop request.
  // Called until it has said true once.
  std::function<bool()> end_now;
  // Ends the launch when it has run this long (0: no limit): explore's deadline per experiment.
  double time_limit_s = 0;
  // Once the command has ended, what is left of its process group is ended too (own_group).
  bool end_rest_with_command = false;
};

enum class WaitEnd : uint8_t {
  kDone,       // every process of the launch ended by itself (and was reaped)
  kEnded,      // end_now said so: the launch was killed
  kTimeLimit,  // time_limit_s passed: the launch was killed
};

class Child {
 public:
  // Starts the command. An error when it cannot be started (pipe, fork); a command whose exec
  // failed is started and ends at once (exit status 127 when not found, else 126): wait()
  // reaps it and exec_errno() then says why.
  static Result<Child> start(const LaunchSpec& spec, std::string_view structure);
  Child(Child&& o) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  ~Child();

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Why exec failed (0: it did not), known once the command is reaped (command_done()).
  [[nodiscard]] int exec_errno() const { return exec_errno_; }
  [[nodiscard]] bool command_done() const { return done_; }
  // The command's exit status, or -signal when a signal ended it.
  [[nodiscard]] int status() const { return status_; }

  // Waits as `w` says. Returns when every process of the launch has been reaped; when the launch
  // was ended by `w` without a group of its own, as soon as the command is reaped (what it left
  // behind is not waited for).
  WaitEnd wait(const Watch& w);

  // The pieces wait() is made of, for a caller that watches many launches from one thread.
  enum class Reaped : uint8_t { kOne, kNone, kAllGone };
  // One waitpid for a process of the launch (its group, or any child of ours without one).
  Reaped reap(bool block);
  // SIGKILL to the command, and to its process group when it has its own.
  void kill();
  // Reads captured output for up to timeout_ms; false once the output has ended.
  bool pump_output(int timeout_ms);
  // The output captured so far (moved out).
  std::string take_output() { return std::move(output_); }

  // catch_crashes: the first fatal signal that reached a thread of the launch (a fault preferred
  // to a signal sent, when both came), captured, not yet resolved; exit_status is the command's.
  [[nodiscard]] const std::optional<CrashReport>& crash() const { return crash_; }
  // catch_crashes: why the launch is not traced ("" when it is).
  [[nodiscard]] const std::string& crash_note() const { return crash_note_; }

 private:
  Child() = default;
  void drain_output();
  // A tracee stopped (catch_crashes): a fatal signal is captured; every stop is resumed.
  void on_stop(pid_t tid, int status);
  void seize(int go_w);

  pid_t pid_ = -1;
  bool own_group_ = false;
  int exec_errno_ = 0;
  bool done_ = false;
  int status_ = 0;
  int out_fd_ = -1;  // the read end of the capture pipe
  int err_fd_ = -1;  // the read end of the exec-error pipe
  std::string output_;
  bool subreaper_ = false;  // this launch holds the subreaper count
  bool traced_ = false;     // catch_crashes, and the seize succeeded
  std::optional<CrashReport> crash_;
  std::string crash_note_;
  std::unordered_set<pid_t> started_;  // tracees whose first stop was seen
  int64_t last_stop_ns_ = 0;           // when a tracee last stopped (wait() looks again soon after)
};

}  // namespace cudatool::record
