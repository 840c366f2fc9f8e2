// Internals of the ptrace recorder (recorder.hpp has the interface): per-process and per-thread
// state, and the class whose loop waits for stops and whose handlers turn them into events.
#pragma once

#include <sys/ptrace.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "record/devices.hpp"
#include "record/function_recorder.hpp"
#include "record/ptrace_stacks.hpp"
#include "record/recorder.hpp"
#include "rm/nv_ioctl_abi.h"

namespace cudatool::record {

class RecorderSignals;

// Resets the members of an environment event (op, target, the stat answer, content, entries,
// unrecorded) of a reused Event.
void clear_env_members(Event& ev);

struct Process {
  int tgid = 0;
  std::shared_ptr<FdTable> fds;
  MappingTable maps;
  int threads = 0;
  // /proc/<tgid>/mem, for reads inside a thread's stack (see PtraceRecorder::stack_read);
  // opened at the first such read, reopened after an exec.
  int mem_fd = -1;
  ProcessStacks stacks;  // v2: its libdwfl session and the module records written for it
  Process() = default;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();
};

// A call seen at its entry whose exit is awaited.
struct PendingCall {
  Event ev;
  int nr = -1;
  std::array<uint64_t, 6> args{};
  uint64_t t_entry = 0;
  // ioctl: the buffers read before, to read again after.
  nvtr_buf_plan arg_plan{};
  std::vector<nvtr_buf_plan> nested;
  int64_t path_id = -1;  // the device path the call concerns
  // Environment events (ptrace_env.cpp): the call's number when it is one (-1 otherwise), where
  // its answer lies in the tracee (stat/statx/readlink buffer), and the absolute path.
  int env_nr = -1;
  uint64_t env_buf = 0;
  std::string env_abs;
};

struct Thread {
  int tid = 0;
  std::shared_ptr<Process> proc;
  bool started = false;  // its first stop was seen (an auto-attached child starts stopped)
  bool pending_valid = false;
  PendingCall pending;
  std::string exec_path;  // execve in flight: the program named
  uint64_t exec_t = 0;
  // Where this thread's last nested parameter buffer was: read together with the next
  // argument, it saves a read when the next call uses the same place (libcuda's stack frames).
  uint64_t guess_addr = 0;
  uint64_t guess_size = 0;
  // The stack pointer at the current stop, and the mapping that holds the stack.
  uint64_t sp = 0;
  uint64_t stack_lo = 0, stack_hi = 0;
  int stack_probes = 0;
};

// The target of the symbolic link at `p` (a /proc path), or "" when it cannot be read.
std::string read_link(const std::string& p);

// The flags of an open, openat or creat call, or of an openat2 (struct open_how's first member,
// read from the tracee; 0 when it cannot be read).
uint64_t open_flags(int tid, int nr, const uint64_t* args);

class PtraceRecorder {
 public:
  PtraceRecorder(const RecordOptions& o, TraceWriter& out);
  Result<RecordSummary> run();

 private:
  // Start-up.
  Status launch(int cpu);
  Status attach();
  void load_attached_state(Process& p);
  // The loop and stop dispatch.
  void loop();
  void on_wait(int tid, int status);
  void on_syscall_stop(Thread& t, bool seccomp);
  void on_new_child(Thread& parent, int event);
  void on_exec(Thread& t);
  void on_gone(int tid, int status);
  // Handlers (ptrace_calls.cpp).
  bool on_entry(Thread& t, int nr, const uint64_t* args);  // true: wants the exit stop
  // The pending event reset in place for a new call of `sys` (its strings and buffers keep their
  // storage from one call to the next).
  void reset_event(Thread& t, Sys sys);
  // A device call starts: the event reset, its path (path_id >= 0) and its stack.
  bool start_device(Thread& t, Sys sys, int64_t path_id);
  bool open_entry(Thread& t, int nr, const uint64_t* args);  // open, openat, openat2, creat
  void on_exit(Thread& t, int64_t rval, bool is_error);
  void read_ioctl_buffers(Thread& t, PendingCall& c, bool after);
  void read_pointees(Thread& t, PendingCall& c);
  // v2: the stack of the call starting at this stop (and the module records it needs, written
  // at once, before its event).
  void capture_stack(Thread& t, Event& ev);
  // Environment events (ptrace_env.cpp): calls on paths, and opens of paths that are no device.
  bool on_env_entry(Thread& t, int nr, const uint64_t* args);
  bool env_open_entry(Thread& t, int nr, const uint64_t* args, const std::string& path);
  void on_env_exit(Thread& t, int64_t rval, bool is_error);
  bool start_env(Thread& t, int nr, Sys sys, const char* op, std::string path);
  // One side of n buffers: one pread of the thread's stack when they all lie in it above the
  // stack pointer (that memory is mapped read-write: it holds the live frames), else one
  // process_vm_readv (fill_buffers). False from stack_fill when it could not be used.
  void fill(Thread& t, const nvtr_buf_plan* plans, Buffer* const* bufs, size_t n, bool after);
  bool stack_fill(Thread& t, const nvtr_buf_plan* plans, Buffer* const* bufs, size_t n, bool after);
  bool in_stack(Thread& t, uint64_t addr, uint64_t size);
  std::string resolve_path(Thread& t, int dirfd, const std::string& path);
  int64_t device_fd(const Thread& t, int fd) const;
  uint32_t intern_device(const std::string& path);
  // Resuming.
  void resume(int tid, int sig = 0);
  void resume_to_exit(int tid);
  // Bookkeeping.
  Thread& thread(int tid);
  std::shared_ptr<Process> new_process(int tgid, const Process* parent);
  void emit(Event& ev);
  Event base_event(const Thread& t, Sys sys, uint64_t t_entry) const;
  uint64_t now_ns() const;
  void detach_all();
  void kill_all();

  const RecordOptions& opt_;
  RecorderSignals* signals_ = nullptr;
  TraceWriter& out_;
  DeviceMatcher devices_;
  DeviceMatcher env_;  // --env: environment paths
  PathTable paths_;
  std::vector<int> path_kind_;  // nvtr_dev_kind per path id
  // UVM parameter sizes of the driver branch (nv_ioctl_abi.h), chosen from the header's version.
  const nvtr_uvm_branch* uvm_ = nullptr;
  // RM class sizes and pointer rules of the same branch (nv_ioctl_abi.h).
  const nvtr_rm_branch* rm_ = nullptr;
  std::unordered_map<int, Thread> threads_;
  std::unordered_map<int, std::shared_ptr<Process>> procs_;
  bool attach_mode_ = false;
  int main_pid_ = -1;
  int main_status_ = 0;  // exit code, or -signal
  bool main_done_ = false;
  int exec_error_fd_ = -1;
  int exec_errno_ = 0;
  uint64_t t0_ = 0;
  uint64_t seq_ = 0;
  RecordSummary sum_;
  std::vector<uint8_t> span_;  // stack_fill's read
  StackRecorder stacks_;
  std::vector<trace::Module> module_records_;
  std::string write_error_;
  std::string end_reason_;
  std::optional<CrashReport> crash_;  // the first fatal signal (a fault over a signal sent)
  // --functions: the in-process recorder (libcudatool_funcrec.so, preloaded) and the device
  // calls seen here, placed into its records by time when the run ends.
  std::optional<FunctionRecorder> functions_;
  std::string funcrec_lib_;
  std::vector<trace::TimedDeviceCall> device_calls_;
};

}  // namespace cudatool::record
