// Call stacks in ptrace mode (docs/tracing.md, "Call stacks"): the stopped thread is unwound by
// elfutils' libdwfl (dwfl_linux_proc_attach + dwfl_getthread_frames, as `strace -k` does), from
// the .eh_frame of the files it has mapped; the module records come from /proc/PID/maps and the
// files' build ids (proc_modules.hpp), read again when the process has mapped a file with
// PROT_EXEC (the seccomp filter stops every file mmap) and after an exec.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "record/proc_modules.hpp"
#include "trace/event.hpp"

struct Dwfl;

namespace cudatool::record {

// Per process: its Dwfl session and the modules whose records are written.
class ProcessStacks {
 public:
  ProcessStacks() = default;
  ~ProcessStacks();
  ProcessStacks(const ProcessStacks&) = delete;
  ProcessStacks& operator=(const ProcessStacks&) = delete;

  // The process mapped code: read its maps again before the next stack.
  void mark_dirty() { dirty_ = true; }
  // A new image: nothing of the old one is valid.
  void reset();

 private:
  friend class StackRecorder;
  Dwfl* dwfl_ = nullptr;
  bool attached_ = false;
  bool dirty_ = true;
  // (path, lo, base) of the records written for this process.
  std::vector<trace::Module> written_;
};

class StackRecorder {
 public:
  static constexpr size_t kMaxFrames = 32;

  // Fills ev.stack / ev.stack_error with the stack of thread `tid` of process `pid`, stopped at
  // a system call (the first frame is the address after the syscall instruction). Appends to
  // `records` the module records the process has not had written yet, for the caller to write
  // before the event.
  void capture(ProcessStacks& p, int pid, int tid, trace::Event& ev,
               std::vector<trace::Module>& records);

 private:
  void refresh(ProcessStacks& p, int pid, std::vector<trace::Module>& records);
  ModuleFiles files_;
  std::string maps_;
};

}  // namespace cudatool::record
