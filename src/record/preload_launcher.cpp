// `cudatool trace --mode preload`: runs the command with the shim preloaded. This process writes
// the header, shares a control block with every copy of the shim (preload_ctl.h), waits for the
// command and all its descendants (as their subreaper), then closes the recording, cuts the
// preallocated tail of the file and appends the exit event and the trailer.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "record/recorder.hpp"
#include "record/shim_abi/preload_ctl.h"
#include "record/signals.hpp"
#include "rm/nv_ioctl_abi.h"
#include "trace/trace_file.hpp"

namespace cudatool::record {
namespace {

Error err(std::string what) {
  return make_error("trace", "", std::nullopt, std::move(what));
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return p;
  return std::string(cwd) + "/" + p;
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// The control block file, mapped here and by every shim; removed when done.
class ControlBlock {
 public:
  ~ControlBlock() {
    if (ctl_ != nullptr) munmap(ctl_, 4096);
    if (!path_.empty()) unlink(path_.c_str());
  }
  Status create(uint64_t t0, uint64_t max_buffer, uint64_t start_off, int uvm_major, bool stacks) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cudatool-preload-XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    if (fd < 0) return err(fmt::format("{}: {}", tmpl, std::strerror(errno)));
    path_ = name.data();
    if (ftruncate(fd, 4096) != 0) {
      close(fd);
      return err(fmt::format("{}: {}", path_, std::strerror(errno)));
    }
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return err(fmt::format("mmap {}: {}", path_, std::strerror(errno)));
    ctl_ = static_cast<cudatool_preload_ctl*>(p);
    ctl_->t0_ns = t0;
    ctl_->max_buffer = max_buffer;
    ctl_->uvm_major = static_cast<uint64_t>(uvm_major);
    ctl_->stacks = stacks ? 1 : 0;
    ctl_->write_off = start_off;
    ctl_->extended_to = start_off;
    __atomic_store_n(&ctl_->magic, CUDATOOL_PRELOAD_MAGIC, __ATOMIC_RELEASE);
    return Status::success();
  }
  cudatool_preload_ctl* operator->() { return ctl_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  cudatool_preload_ctl* ctl_ = nullptr;
  std::string path_;
};

}  // namespace

Result<RecordSummary> record_preload(const RecordOptions& o, const std::string& out_path) {
  std::string shim =
      o.preload_lib.empty() ? self_dir() + "/libcudatool_preload.so" : absolute(o.preload_lib);
  if (access(shim.c_str(), R_OK) != 0) {
    return err(fmt::format("preload shim {} not found ({}); pass --preload-lib", shim,
                           std::strerror(errno)));
  }
  bool zst = out_path.size() > 4 && out_path.compare(out_path.size() - 4, 4, ".zst") == 0;
  // The shims write plain lines; a .zst trace is compressed from this spool at the end.
  std::string events_path = absolute(zst ? out_path + ".spool" : out_path);
  RecordSummary sum;
  int uvm_major = 0;  // the driver's major: the shims read UVM arguments by its branch's sizes
  {
    auto w = TraceWriter::create(events_path, TraceWriter::Compression::kNone);
    if (!w) return w.error();
    Header h = make_header(o.argv, "preload", o.devices);
    h.stacks = o.stacks;
    h.env = o.env;
    if (h.driver_version) uvm_major = nvtr_driver_major(h.driver_version->c_str());
    if (Status st = (*w)->write_header(h); !st.ok()) return st.error();
    if (Status st = (*w)->close(); !st.ok()) return st.error();
  }
  struct stat st {};
  if (stat(events_path.c_str(), &st) != 0) return err(events_path + ": " + std::strerror(errno));
  uint64_t t0 = monotonic_ns();
  ControlBlock ctl;
  if (Status s =
          ctl.create(t0, o.max_buffer, static_cast<uint64_t>(st.st_size), uvm_major, o.stacks);
      !s.ok()) {
    return s.error();
  }

  std::string preload = shim;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += ":" + std::string(old);
  }
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) return err(std::string("pipe: ") + std::strerror(errno));
  // Descendants that outlive the command are reparented here, so the recording ends only when
  // no process can still write to it.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  RecorderSignals signals;
  pid_t pid = fork();
  if (pid < 0) return err(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(errpipe[0]);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv(CUDATOOL_ENV_TRACE, events_path.c_str(), 1);
    setenv(CUDATOOL_ENV_CTL, ctl.path().c_str(), 1);
    setenv(CUDATOOL_ENV_DEVICES, o.devices.c_str(), 1);
    if (o.env.empty()) {
      unsetenv(CUDATOOL_ENV_ENV);
    } else {
      setenv(CUDATOOL_ENV_ENV, o.env.c_str(), 1);
    }
    execvp(argv[0], argv.data());
    int e = errno;
    (void)!write(errpipe[1], &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
  }
  close(errpipe[1]);
  signals.forward_to(pid);
  int main_status = 0;
  bool main_done = false, interrupted = false;
  while (true) {
    if (signals.count() > 1 && !interrupted) {
      interrupted = true;
      kill(pid, SIGKILL);
      if (main_done) break;
    }
    int status = 0;
    pid_t w = waitpid(-1, &status, 0);
    if (w < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: the command and every descendant have ended
    }
    if (w == pid && (WIFEXITED(status) || WIFSIGNALED(status))) {
      main_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      main_done = true;
      if (interrupted) break;
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  int exec_errno = 0;
  if (read(errpipe[0], &exec_errno, sizeof exec_errno) != static_cast<ssize_t>(sizeof exec_errno)) {
    exec_errno = 0;
  }
  close(errpipe[0]);

  // End the recording: no shim writes past `end` from now on.
  uint64_t end = __atomic_fetch_or(&ctl->write_off, CUDATOOL_PRELOAD_CLOSED, __ATOMIC_ACQ_REL) &
                 ~CUDATOOL_PRELOAD_CLOSED;
  if (truncate(events_path.c_str(), static_cast<off_t>(end)) != 0) {
    return err(fmt::format("truncate {}: {}", events_path, std::strerror(errno)));
  }
  int fd = open(events_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return err(fmt::format("{}: {}", events_path, std::strerror(errno)));
  auto tail = TraceWriter::adopt_fd(fd, events_path);
  Event ex;
  ex.t_ns = monotonic_ns() - t0;
  ex.pid = ex.tid = pid;
  ex.sys = Sys::kExit;
  ex.ret = main_status;
  uint64_t written = __atomic_load_n(&ctl->written, __ATOMIC_ACQUIRE);
  if (main_done && exec_errno == 0) {
    ex.seq = __atomic_fetch_add(&ctl->seq, 1, __ATOMIC_ACQ_REL);
    if (Status s = tail->write_event(ex); !s.ok()) return s.error();
    ++written;
  }
  Trailer& tr = sum.trailer;
  tr.events = written;
  tr.reason = interrupted ? "interrupted" : main_status < 0 ? "signal" : "exit";
  tr.exit_status = main_status;
  tr.routes = {{"ioctl", __atomic_load_n(&ctl->route_ioctl, __ATOMIC_ACQUIRE)},
               {"syscall", __atomic_load_n(&ctl->route_syscall, __ATOMIC_ACQUIRE)}};
  tr.lost = __atomic_load_n(&ctl->lost, __ATOMIC_ACQUIRE);
  if (Status s = tail->write_trailer(tr); !s.ok()) return s.error();
  if (Status s = tail->close(); !s.ok()) return s.error();
  sum.processes = __atomic_load_n(&ctl->processes, __ATOMIC_ACQUIRE);

  sum.events = tr.events;
  if (o.count_events) {
    // Per-kind and per-device counts, read back from the trace (which checks it, too).
    auto r = trace::TraceReader::open(events_path);
    if (!r) return r.error();
    Event ev;
    sum.events = 0;
    while ((*r)->next(ev)) {
      ++sum.events;
      count_event(sum, ev);
    }
  }
  if (zst) {
    auto z = TraceWriter::create(out_path, TraceWriter::Compression::kZstd);
    if (!z) return z.error();
    auto in = trace::LineSource::open(events_path);
    if (!in) return in.error();
    std::string_view line;
    uint64_t off = 0;
    bool complete = true;
    std::string chunk;
    while ((*in)->next(line, off, complete)) {
      chunk.append(line);
      chunk.push_back('\n');
      if (chunk.size() > (1 << 20)) {
        if (Status s = (*z)->write_raw_lines(chunk); !s.ok()) return s.error();
        chunk.clear();
      }
    }
    if (Status s = (*z)->write_raw_lines(chunk); !s.ok()) return s.error();
    if (Status s = (*z)->close(); !s.ok()) return s.error();
    unlink(events_path.c_str());
  }
  sum.placement = "in-process";
  if (exec_errno != 0) {
    sum.error = fmt::format("cannot run '{}': {}", o.argv[0], std::strerror(exec_errno));
  }
  if (interrupted) {
    sum.exit_code = 128 + signals.last();
  } else if (main_status < 0) {
    sum.term_signal = -main_status;
    sum.exit_code = 128 - main_status;
  } else {
    sum.exit_code = main_status;
  }
  return sum;
}

}  // namespace cudatool::record
