// `cudatool trace --mode preload`: runs the command with the shim preloaded (record/launch.hpp).
// This process writes the header, shares a control block with every copy of the shim
// (shim_abi/preload_ctl.h), waits for the command and all its descendants (as their subreaper),
// then closes the recording, cuts the preallocated tail of the file and appends the exit event
// and the trailer.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "record/launch.hpp"
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

// The header line, written before the command starts: the shims append after it. Returns the
// driver's major (the shims read UVM arguments by its branch's sizes; 0: the newest).
Result<int> write_header(const RecordOptions& o, const std::string& events_path) {
  auto w = TraceWriter::create(events_path, TraceWriter::Compression::kNone);
  if (!w) return w.error();
  Header h = make_header(o.argv, "preload", o.devices);
  h.stacks = o.stacks;
  h.env = o.env;
  int uvm_major = h.driver_version ? nvtr_driver_major(h.driver_version->c_str()) : 0;
  if (Status st = (*w)->write_header(h); !st.ok()) return st.error();
  if (Status st = (*w)->close(); !st.ok()) return st.error();
  return uvm_major;
}

LaunchSpec launch_spec(const RecordOptions& o, const std::string& shim,
                       const std::string& events_path, const std::string& ctl_path) {
  LaunchSpec spec;
  spec.argv = o.argv;
  spec.preload = shim;
  spec.set_env = {{CUDATOOL_ENV_TRACE, events_path},
                  {CUDATOOL_ENV_CTL, ctl_path},
                  {CUDATOOL_ENV_DEVICES, o.devices}};
  if (o.env.empty()) {
    spec.unset_env.emplace_back(CUDATOOL_ENV_ENV);
  } else {
    spec.set_env.emplace_back(CUDATOOL_ENV_ENV, o.env);
  }
  return spec;
}

// Ends the recording (no shim writes past the offset it reads), cuts the preallocated tail, and
// appends the exit event (when the command ran and ended) and the trailer.
Status finish_trace(ControlBlock& ctl, const std::string& events_path, const Child& child,
                    bool interrupted, uint64_t t0, Trailer& tr) {
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
  ex.pid = ex.tid = child.pid();
  ex.sys = Sys::kExit;
  ex.ret = child.status();
  uint64_t written = __atomic_load_n(&ctl->written, __ATOMIC_ACQUIRE);
  if (child.command_done() && child.exec_errno() == 0) {
    ex.seq = __atomic_fetch_add(&ctl->seq, 1, __ATOMIC_ACQ_REL);
    if (Status s = tail->write_event(ex); !s.ok()) return s;
    ++written;
  }
  tr.events = written;
  tr.reason = interrupted ? "interrupted" : child.status() < 0 ? "signal" : "exit";
  tr.exit_status = child.status();
  tr.routes = {{"ioctl", __atomic_load_n(&ctl->route_ioctl, __ATOMIC_ACQUIRE)},
               {"syscall", __atomic_load_n(&ctl->route_syscall, __ATOMIC_ACQUIRE)}};
  tr.lost = __atomic_load_n(&ctl->lost, __ATOMIC_ACQUIRE);
  if (Status s = tail->write_trailer(tr); !s.ok()) return s;
  return tail->close();
}

// Per-kind and per-device counts, read back from the trace (which checks it, too).
Status count_events(const std::string& events_path, RecordSummary& sum) {
  auto r = trace::TraceReader::open(events_path);
  if (!r) return r.error();
  Event ev;
  sum.events = 0;
  while ((*r)->next(ev)) {
    ++sum.events;
    count_event(sum, ev);
  }
  return Status::success();
}

// The spool of plain lines the shims wrote, compressed into the .zst trace, then removed.
Status compress_spool(const std::string& events_path, const std::string& out_path) {
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
      if (Status s = (*z)->write_raw_lines(chunk); !s.ok()) return s;
      chunk.clear();
    }
  }
  if (Status s = (*z)->write_raw_lines(chunk); !s.ok()) return s;
  if (Status s = (*z)->close(); !s.ok()) return s;
  unlink(events_path.c_str());
  return Status::success();
}

// What cudatool exits with, and the error to report when the command could not run.
void set_exit(const RecordOptions& o, const Child& child, bool interrupted, int last_signal,
              RecordSummary& sum) {
  if (child.exec_errno() != 0) {
    sum.error = fmt::format("cannot run '{}': {}", o.argv[0], std::strerror(child.exec_errno()));
  }
  if (interrupted) {
    sum.exit_code = 128 + last_signal;
  } else if (child.status() < 0) {
    sum.term_signal = -child.status();
    sum.exit_code = 128 - child.status();
  } else {
    sum.exit_code = child.status();
  }
}

}  // namespace

Result<RecordSummary> record_preload(const RecordOptions& o, const std::string& out_path) {
  auto shim =
      find_shim(o.preload_lib, "libcudatool_preload.so", "trace", "preload shim", "--preload-lib");
  if (!shim) return shim.error();
  bool zst = out_path.size() > 4 && out_path.compare(out_path.size() - 4, 4, ".zst") == 0;
  // The shims write plain lines; a .zst trace is compressed from this spool at the end.
  std::string events_path = absolute_path(zst ? out_path + ".spool" : out_path);
  auto uvm_major = write_header(o, events_path);
  if (!uvm_major) return uvm_major.error();
  struct stat st {};
  if (stat(events_path.c_str(), &st) != 0) return err(events_path + ": " + std::strerror(errno));
  uint64_t t0 = monotonic_ns();
  ControlBlock ctl;
  if (Status s =
          ctl.create(t0, o.max_buffer, static_cast<uint64_t>(st.st_size), *uvm_major, o.stacks);
      !s.ok()) {
    return s.error();
  }
  // Descendants that outlive the command are reparented here (the launcher's subreaper), so the
  // recording ends only when no process can still write to it.
  RecorderSignals signals;
  auto child = Child::start(launch_spec(o, *shim, events_path, ctl.path()), "trace");
  if (!child) return child.error();
  signals.forward_to(child->pid());
  Watch watch;
  watch.end_now = [&signals] { return signals.count() > 1; };  // a second signal ends it
  bool interrupted = child->wait(watch) == WaitEnd::kEnded;

  RecordSummary sum;
  if (Status s = finish_trace(ctl, events_path, *child, interrupted, t0, sum.trailer); !s.ok()) {
    return s.error();
  }
  sum.processes = __atomic_load_n(&ctl->processes, __ATOMIC_ACQUIRE);
  sum.events = sum.trailer.events;
  if (o.count_events) {
    if (Status s = count_events(events_path, sum); !s.ok()) return s.error();
  }
  if (zst) {
    if (Status s = compress_spool(events_path, out_path); !s.ok()) return s.error();
  }
  sum.placement = "in-process";
  set_exit(o, *child, interrupted, signals.last(), sum);
  return sum;
}

}  // namespace cudatool::record
