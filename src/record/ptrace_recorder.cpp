// The ptrace recorder: launch (fork, seize, seccomp filter, exec) or attach, then one loop that
// waits for stops of every traced thread and turns them into events.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "record/launch.hpp"
#include "record/ptrace_recorder_impl.hpp"
#include "record/seccomp_filter.hpp"
#include "record/signals.hpp"

namespace cudatool::record {
namespace {

bool read_status_field(int tid, const char* field, int& out) {
  std::ifstream f(fmt::format("/proc/{}/status", tid));
  std::string line;
  size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      out = std::atoi(line.c_str() + n + 1);
      return true;
    }
  }
  return false;
}

constexpr unsigned kOptions = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEFORK |
                              PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC;

}  // namespace

std::string read_link(const std::string& p) {
  char buf[PATH_MAX];
  ssize_t n = readlink(p.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

PtraceRecorder::PtraceRecorder(const RecordOptions& o, TraceWriter& out)
    : opt_(o), out_(out), devices_(o.devices), env_(o.env) {
  if (o.stacks) out_.use_stack_records();  // v3: each distinct stack written once
}

uint64_t PtraceRecorder::now_ns() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

std::shared_ptr<Process> PtraceRecorder::new_process(int tgid, const Process* parent) {
  auto p = std::make_shared<Process>();
  p->tgid = tgid;
  p->fds = std::make_shared<FdTable>();
  if (parent != nullptr) {
    *p->fds = *parent->fds;  // fork copies the fd table and the address space
    p->maps = parent->maps;
  }
  procs_[tgid] = p;
  ++sum_.processes;
  return p;
}

Thread& PtraceRecorder::thread(int tid) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return it->second;
  // First sight of a thread: an auto-attached child whose stop came before its parent's event.
  int tgid = tid, ppid = 0;
  read_status_field(tid, "Tgid", tgid);
  read_status_field(tid, "PPid", ppid);
  std::shared_ptr<Process> proc;
  if (auto p = procs_.find(tgid); p != procs_.end()) {
    proc = p->second;
  } else {
    auto parent = procs_.find(ppid);
    proc = new_process(tgid, parent != procs_.end() ? parent->second.get() : nullptr);
  }
  Thread& t = threads_[tid];
  t.tid = tid;
  t.proc = proc;
  ++proc->threads;
  ++sum_.threads;
  return t;
}

Event PtraceRecorder::base_event(const Thread& t, Sys sys, uint64_t t_entry) const {
  Event ev;
  ev.t_ns = t_entry - t0_;
  ev.pid = t.proc->tgid;
  ev.tid = t.tid;
  ev.sys = sys;
  ev.sys_raw = std::string(sys_name(sys));
  return ev;
}

void PtraceRecorder::capture_stack(Thread& t, Event& ev) {
  if (!opt_.stacks) {
    ev.stack.clear();
    ev.stack_error.clear();
    return;
  }
  module_records_.clear();
  stacks_.capture(t.proc->stacks, t.proc->tgid, t.tid, ev, module_records_);
  for (const trace::Module& m : module_records_) {
    if (!write_error_.empty()) break;
    if (Status st = out_.write_module(m); !st.ok()) write_error_ = st.error().message();
  }
}

void PtraceRecorder::emit(Event& ev) {
  ev.seq = seq_++;
  count_event(sum_, ev);
  if (functions_ && ev.sys <= Sys::kMunmap) {
    device_calls_.push_back({.pid = ev.pid, .tid = ev.tid, .t_ns = ev.t_ns, .seq = ev.seq});
  }
  if (!write_error_.empty()) return;
  Status st = out_.write_event(ev);
  if (!st.ok()) write_error_ = st.error().message();
}

void PtraceRecorder::resume(int tid, int sig) {
  ptrace(attach_mode_ ? PTRACE_SYSCALL : PTRACE_CONT, tid, 0, sig);
}

void PtraceRecorder::resume_to_exit(int tid) {
  ptrace(PTRACE_SYSCALL, tid, 0, 0);
}

Status PtraceRecorder::launch(int cpu) {
  int sync[2], err[2];
  if (pipe2(sync, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return make_error("trace", "", std::nullopt, fmt::format("pipe: {}", std::strerror(errno)));
  }
  std::vector<sock_filter> filter = recorder_filter(!env_.spec().empty());
  std::vector<char*> argv;
  for (const auto& a : opt_.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // --functions: the recorder preloaded, told the plan and the spool by its environment.
  LaunchSpec spec;
  if (functions_ && functions_->active()) {
    spec.preload = funcrec_lib_;
    spec.set_env = functions_->env();
  }
  std::vector<std::string> env = child_environment(spec);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  if (cpu >= 0) {
    // Recorder and command on one CPU: a ptrace stop then wakes the recorder without a
    // cross-CPU wake-up (docs/tracing.md, "Placement"). The child inherits the mask.
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
  pid_t pid = fork();
  if (pid < 0) {
    return make_error("trace", "", std::nullopt, fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    close(sync[1]);
    close(err[0]);
    char c = 0;
    while (read(sync[0], &c, 1) < 0 && errno == EINTR) {
    }
    int e = install_filter(filter);
    if (e == 0) {
      execvpe(argv[0], argv.data(), envp.data());
      e = errno;
    } else {
      e = -e;  // negative: the filter failed, not exec
    }
    (void)!write(err[1], &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
  }
  close(sync[0]);
  close(err[1]);
  exec_error_fd_ = err[0];
  main_pid_ = pid;
  if (ptrace(PTRACE_SEIZE, pid, 0, kOptions | PTRACE_O_EXITKILL) != 0) {
    int e = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(sync[1]);
    return make_error("trace", "", std::nullopt,
                      fmt::format("ptrace(PTRACE_SEIZE): {}{}", std::strerror(e),
                                  e == EPERM ? " (ptrace is not permitted here: check "
                                               "/proc/sys/kernel/yama/ptrace_scope, or use "
                                               "--mode preload)"
                                             : ""));
  }
  auto proc = new_process(pid, nullptr);
  Thread& t = threads_[pid];
  t.tid = pid;
  t.proc = proc;
  t.started = true;
  ++proc->threads;
  ++sum_.threads;
  if (signals_ != nullptr) signals_->forward_to(pid);
  close(sync[1]);  // lets the child install its filter and exec
  return Status::success();
}

void PtraceRecorder::load_attached_state(Process& p) {
  // Device fds and device mappings the process already has.
  std::string fd_dir = fmt::format("/proc/{}/fd", p.tgid);
  if (DIR* d = opendir(fd_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::string target = read_link(fd_dir + "/" + e->d_name);
      if (!target.empty() && devices_.matches(target)) {
        p.fds->fds[std::atoi(e->d_name)] = intern_device(target);
      }
    }
    closedir(d);
  }
  std::ifstream maps(fmt::format("/proc/{}/maps", p.tgid));
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (!devices_.matches(path)) continue;
    uint64_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && hi > lo) {
      p.maps[lo] = DeviceMapping{hi - lo, intern_device(path)};
    }
  }
}

Status PtraceRecorder::attach() {
  attach_mode_ = true;
  int pid = opt_.attach_pid;
  main_pid_ = pid;
  std::string task_dir = fmt::format("/proc/{}/task", pid);
  if (access(task_dir.c_str(), F_OK) != 0) {
    return make_error("--pid", "", std::nullopt, fmt::format("no process {}", pid));
  }
  auto proc = new_process(pid, nullptr);
  // Seize every thread; threads created meanwhile by a thread not yet seized are found by the
  // next scan (those created by a seized one are attached automatically).
  bool found_new = true;
  while (found_new) {
    found_new = false;
    DIR* d = opendir(task_dir.c_str());
    if (d == nullptr) break;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int tid = std::atoi(e->d_name);
      if (threads_.count(tid) != 0) continue;
      if (ptrace(PTRACE_SEIZE, tid, 0, kOptions) != 0) {
        int err = errno;
        if (err == ESRCH) continue;  // the thread ended
        closedir(d);
        detach_all();
        return make_error("--pid", "", std::nullopt,
                          fmt::format("ptrace(PTRACE_SEIZE, {}): {}", tid, std::strerror(err)));
      }
      ptrace(PTRACE_INTERRUPT, tid, 0, 0);
      Thread& t = threads_[tid];
      t.tid = tid;
      t.proc = proc;
      ++proc->threads;
      ++sum_.threads;
      found_new = true;
    }
    closedir(d);
  }
  load_attached_state(*proc);
  return Status::success();
}

void PtraceRecorder::on_new_child(Thread& parent, int event) {
  unsigned long msg = 0;
  ptrace(PTRACE_GETEVENTMSG, parent.tid, 0, &msg);
  int child = static_cast<int>(msg);
  auto it = threads_.find(child);
  if (it == threads_.end()) {
    int tgid = child;
    if (event == PTRACE_EVENT_CLONE) read_status_field(child, "Tgid", tgid);
    Thread& t = threads_[child];
    t.tid = child;
    if (tgid == parent.proc->tgid) {
      t.proc = parent.proc;
    } else {
      t.proc = new_process(child, parent.proc.get());
    }
    ++t.proc->threads;
    ++sum_.threads;
    it = threads_.find(child);
  }
  if (it->second.proc->tgid != parent.proc->tgid) {
    Event ev = base_event(parent, Sys::kFork, now_ns());
    ev.child_pid = child;
    ev.ret = child;
    emit(ev);
  }
}

void PtraceRecorder::on_exec(Thread& t) {
  unsigned long former = 0;
  ptrace(PTRACE_GETEVENTMSG, t.tid, 0, &former);
  std::string path = t.exec_path;
  uint64_t t_entry = t.exec_t;
  auto proc = t.proc;
  // The other threads of the process are gone; the one that called execve now has the
  // process's id.
  if (static_cast<int>(former) != t.tid) {
    if (auto f = threads_.find(static_cast<int>(former)); f != threads_.end()) {
      path = f->second.exec_path;
      t_entry = f->second.exec_t;
    }
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->second.proc == proc && it->first != t.tid) {
      --proc->threads;
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  Thread& self = threads_[t.tid];
  self.pending_valid = false;
  self.exec_path.clear();
  // A new address space; fds marked close-on-exec are gone.
  proc->maps.clear();
  proc->stacks.reset();
  if (proc->mem_fd >= 0) {
    close(proc->mem_fd);  // it reads the old address space
    proc->mem_fd = -1;
  }
  self.stack_lo = self.stack_hi = 0;
  self.stack_probes = 0;
  self.guess_size = 0;
  for (auto it = proc->fds->fds.begin(); it != proc->fds->fds.end();) {
    if (access(fmt::format("/proc/{}/fd/{}", proc->tgid, it->first).c_str(), F_OK) != 0) {
      it = proc->fds->fds.erase(it);
    } else {
      ++it;
    }
  }
  if (path.empty()) path = read_link(fmt::format("/proc/{}/exe", proc->tgid));
  Event ev = base_event(self, Sys::kExecve, t_entry != 0 ? t_entry : now_ns());
  ev.has_duration = t_entry != 0;
  ev.dur_ns = t_entry != 0 ? now_ns() - t_entry : 0;
  ev.path = path;
  emit(ev);
}

void PtraceRecorder::on_gone(int tid, int status) {
  auto it = threads_.find(tid);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  if (tid == main_pid_) {
    main_status_ = code;
    main_done_ = true;
    if (crash_) crash_->exit_status = code;
  }
  if (it == threads_.end()) return;
  Thread& t = it->second;
  Event ev = base_event(t, Sys::kExit, now_ns());
  ev.ret = code;
  emit(ev);
  auto proc = t.proc;
  threads_.erase(it);
  if (--proc->threads <= 0) procs_.erase(proc->tgid);
}

void PtraceRecorder::on_wait(int tid, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    on_gone(tid, status);
    return;
  }
  if (!WIFSTOPPED(status)) return;
  Thread& t = thread(tid);
  int sig = WSTOPSIG(status);
  int event = (status >> 16) & 0xff;
  if (sig == (SIGTRAP | 0x80)) {
    on_syscall_stop(t, false);
    return;
  }
  switch (event) {
    case PTRACE_EVENT_SECCOMP:
      on_syscall_stop(t, true);
      return;
    case PTRACE_EVENT_FORK:
    case PTRACE_EVENT_VFORK:
    case PTRACE_EVENT_CLONE:
      on_new_child(t, event);
      resume(tid);
      return;
    case PTRACE_EVENT_EXEC:
      on_exec(t);
      resume(tid);
      return;
    case PTRACE_EVENT_STOP: {
      bool first = !t.started;
      t.started = true;
      if (!first && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)) {
        ptrace(PTRACE_LISTEN, tid, 0, 0);  // group-stop: stay stopped until SIGCONT
      } else {
        resume(tid);
      }
      return;
    }
    case 0:
      // Signal-delivery-stop: the signal goes on to the program. A fatal one is read first,
      // before the program's handler runs (crash.hpp).
      t.started = true;
      if (is_crash_signal(sig) && (!crash_ || crash_->sent)) {
        CrashReport c = capture_crash(tid, sig);
        if (!crash_ || !c.sent) crash_ = std::move(c);
      }
      resume(tid, sig);
      return;
    default:
      resume(tid);
  }
}

void PtraceRecorder::on_syscall_stop(Thread& t, bool seccomp) {
  __ptrace_syscall_info info{};
  long n = ptrace(PTRACE_GET_SYSCALL_INFO, t.tid, sizeof info, &info);
  if (n <= 0) {
    resume(t.tid);
    return;
  }
  if (info.op == PTRACE_SYSCALL_INFO_EXIT) {
    t.sp = info.stack_pointer;
    if (t.pending_valid) on_exit(t, info.exit.rval, info.exit.is_error != 0);
    resume(t.tid);
    return;
  }
  t.sp = info.stack_pointer;
  const uint64_t* args = nullptr;
  uint64_t nr = 0;
  if (info.op == PTRACE_SYSCALL_INFO_SECCOMP) {
    nr = info.seccomp.nr;
    args = info.seccomp.args;
  } else if (info.op == PTRACE_SYSCALL_INFO_ENTRY) {
    nr = info.entry.nr;
    args = info.entry.args;
  } else {
    resume(t.tid);
    return;
  }
  bool want_exit = info.arch == 0xc000003eU /* AUDIT_ARCH_X86_64 */ && nr < 0x40000000 &&
                   on_entry(t, static_cast<int>(nr), args);
  (void)seccomp;
  if (want_exit) {
    resume_to_exit(t.tid);
  } else {
    t.pending_valid = false;
    resume(t.tid);
  }
}

void PtraceRecorder::kill_all() {
  for (const auto& [tgid, p] : procs_) kill(tgid, SIGKILL);
  if (main_pid_ > 0) kill(main_pid_, SIGKILL);
}

void PtraceRecorder::detach_all() {
  // Stop every thread, then detach it where it stopped (a signal it was about to get is passed).
  for (const auto& [tid, t] : threads_) ptrace(PTRACE_INTERRUPT, tid, 0, 0);
  std::unordered_map<int, bool> left;
  for (const auto& [tid, t] : threads_) left[tid] = true;
  while (!left.empty()) {
    int status = 0;
    int tid = waitpid(-1, &status, __WALL);
    if (tid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (left.erase(tid) == 0) continue;
    if (!WIFSTOPPED(status)) continue;
    int sig = WSTOPSIG(status);
    int event = (status >> 16) & 0xff;
    ptrace(PTRACE_DETACH, tid, 0, (event == 0 && sig != (SIGTRAP | 0x80)) ? sig : 0);
  }
}

void PtraceRecorder::loop() {
  while (!threads_.empty()) {
    int signals = signals_->count();
    if (signals > 0 && (attach_mode_ || signals > 1)) {
      if (attach_mode_) {
        detach_all();
        end_reason_ = "detached";
      } else {
        kill_all();
        end_reason_ = "interrupted";
      }
      return;
    }
    int status = 0;
    int tid = waitpid(-1, &status, __WALL);
    if (tid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: nothing left
    }
    on_wait(tid, status);
  }
}

Result<RecordSummary> PtraceRecorder::run() {
  RecorderSignals guard;
  signals_ = &guard;
  int cpu = -1;
  if (!attach_mode_ && opt_.attach_pid == 0) {
    auto c = choose_cpu(opt_.cpu);
    if (!c) return c.error();
    cpu = *c;
  }
  sum_.placement = cpu >= 0 ? fmt::format("same-cpu {}", cpu) : "any";
  Header h = make_header(opt_.argv, "ptrace", devices_.spec());
  h.placement = sum_.placement;
  h.stacks = opt_.stacks;
  h.env = env_.spec();
  uvm_ = nvtr_uvm_branch_for_major(h.driver_version ? nvtr_driver_major(h.driver_version->c_str())
                                                    : 0);
  rm_ = nvtr_rm_branch_for_major(uvm_->major);
  if (!opt_.functions.empty() && opt_.attach_pid == 0) {
    // Beside cudatool; without it, preload mode's shim carries the recorder too.
    auto lib =
        find_shim("", "libcudatool_funcrec.so", "trace", "function recorder", "--mode preload");
    if (!lib) return lib.error();
    funcrec_lib_ = *lib;
    FunctionRecorderOptions fo;
    fo.globs = opt_.functions;
    fo.libraries = function_libraries(opt_.functions_lib, opt_.argv);
    functions_ = FunctionRecorder::prepare(fo);
    if (functions_->active()) h.functions = opt_.functions;
  }
  if (opt_.attach_pid != 0) {
    std::ifstream f(fmt::format("/proc/{}/cmdline", opt_.attach_pid), std::ios::binary);
    std::string arg;
    h.argv.clear();
    while (std::getline(f, arg, '\0')) h.argv.push_back(arg);
  }
  if (Status st = out_.write_header(h); !st.ok()) return st.error();
  t0_ = now_ns();
  Status st = opt_.attach_pid != 0 ? attach() : launch(cpu);
  if (!st.ok()) return st.error();
  loop();
  if (exec_error_fd_ >= 0) {
    int e = 0;
    if (read(exec_error_fd_, &e, sizeof e) == static_cast<ssize_t>(sizeof e)) exec_errno_ = e;
    close(exec_error_fd_);
  }
  if (end_reason_ == "interrupted") {
    // Reap what was killed; nothing more is recorded.
    while (waitpid(-1, nullptr, __WALL) > 0 || errno == EINTR) {
    }
  }
  if (functions_) {
    sum_.functions = write_error_.empty() ? functions_->write_into(out_, t0_, {}, &device_calls_)
                                          : functions_->outcome();
  }
  Trailer& tr = sum_.trailer;
  tr.events = seq_;
  if (end_reason_.empty()) end_reason_ = main_status_ < 0 ? "signal" : "exit";
  if (main_done_) keep_crash(std::move(crash_), sum_);
  tr.reason = end_reason_;
  tr.exit_status = main_status_;
  if (Status w = out_.write_trailer(tr); !w.ok() && write_error_.empty()) {
    write_error_ = w.error().message();
  }
  if (Status c = out_.close(); !c.ok() && write_error_.empty()) write_error_ = c.error().message();
  sum_.events = seq_;
  if (end_reason_ == "interrupted") {
    sum_.exit_code = 128 + signals_->last();
  } else if (end_reason_ == "detached") {
    sum_.exit_code = 0;
  } else if (main_status_ < 0) {
    sum_.term_signal = -main_status_;
    sum_.exit_code = 128 - main_status_;
  } else {
    sum_.exit_code = main_status_;
  }
  if (exec_errno_ > 0) {
    sum_.error = fmt::format("cannot run '{}': {}", opt_.argv.empty() ? "" : opt_.argv[0],
                             std::strerror(exec_errno_));
  } else if (exec_errno_ < 0) {
    sum_.error = fmt::format("cannot install the seccomp filter: {}", std::strerror(-exec_errno_));
  }
  signals_ = nullptr;
  if (!write_error_.empty()) return make_error("trace", "", std::nullopt, write_error_);
  return sum_;
}

Result<RecordSummary> record_ptrace(const RecordOptions& options, TraceWriter& out) {
  PtraceRecorder r(options, out);
  return r.run();
}

}  // namespace cudatool::record
