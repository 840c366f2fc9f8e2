#include "record/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/clock.hpp"

extern char** environ;

namespace cudatool::record {
namespace {

constexpr size_t kCaptureMax = 16u << 20;

// Held from a launch's first pipe to the parent's last close of a write end: a child forked by
// another thread then inherits no end that a launch still waits on. A traced child holds its exec
// until its parent closes the hold pipe's write end; two children that had each inherited the
// other's write end waited for each other for ever.
std::mutex g_start_mu;

// PR_SET_CHILD_SUBREAPER while any launch holds it: parallel launches share the setting.
std::mutex g_subreaper_mu;
int g_subreaper_holders = 0;

void subreaper_hold() {
  std::lock_guard<std::mutex> l(g_subreaper_mu);
  if (g_subreaper_holders++ == 0) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

void subreaper_release() {
  std::lock_guard<std::mutex> l(g_subreaper_mu);
  if (--g_subreaper_holders == 0) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Between fork and exec: async-signal-safe calls only (a parallel launcher may have threads).
// go[0] >= 0 (catch_crashes): wait until the parent has seized this process (it closes its end).
[[noreturn]] void exec_child(const LaunchSpec& spec, char* const* argv, char* const* envp,
                             int out_w, int err_w, const int go[2]) {
  if (spec.own_group) setpgid(0, 0);
  if (spec.fixed_layout) {
    int cur = personality(0xffffffff);
    if (cur != -1) personality(static_cast<unsigned long>(cur) | ADDR_NO_RANDOMIZE);
  }
  if (go[0] >= 0) {
    ::close(go[1]);
    char b = 0;
    while (::read(go[0], &b, 1) < 0 && errno == EINTR) {
    }
  }
  if (spec.output == ChildOutput::kCapture) {
    dup2(out_w, 1);
    dup2(out_w, 2);
  } else if (spec.output == ChildOutput::kDiscard) {
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
      if (null > 2) ::close(null);
    }
  }
  int e = 0;
  if (!spec.dir.empty() && chdir(spec.dir.c_str()) != 0) {
    e = errno;
  } else {
    execvpe(argv[0], argv, envp);
    e = errno;
  }
  (void)!::write(err_w, &e, sizeof e);
  _exit(e == ENOENT ? 127 : 126);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every new thread and process stops once on being traced, and each of its clone, fork and exec
// too: after a stop, wait() looks again within this long, not after its poll_ms (which would
// add poll_ms per thread a replayed libcuda starts).
constexpr int64_t kBusyAfterStopNs = 200'000'000;

constexpr unsigned kSeizeOptions =
    PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC;

bool is_stop_signal(int sig) {
  return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

}  // namespace

std::vector<std::string> child_environment(const LaunchSpec& spec) {
  std::vector<std::pair<std::string, std::string>> set;
  if (!spec.preload.empty()) {
    std::string preload = spec.preload;
    if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
      preload += ":" + std::string(old);
    }
    set.emplace_back("LD_PRELOAD", std::move(preload));
  }
  set.insert(set.end(), spec.set_env.begin(), spec.set_env.end());
  std::vector<std::string> env;
  std::vector<bool> used(set.size(), false);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    std::string_view key = kv.substr(0, kv.find('='));
    bool drop = false;
    for (const auto& u : spec.unset_env) drop = drop || key == u;
    for (size_t i = 0; i < set.size() && !drop; ++i) {
      if (key != set[i].first) continue;
      if (!used[i]) env.push_back(set[i].first + "=" + set[i].second);
      used[i] = true;
      drop = true;
    }
    if (!drop) env.emplace_back(kv);
  }
  for (size_t i = 0; i < set.size(); ++i) {
    if (!used[i]) env.push_back(set[i].first + "=" + set[i].second);
  }
  return env;
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string absolute_path(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return p;
  return std::string(cwd) + "/" + p;
}

Result<std::string> find_shim(const std::string& given, std::string_view file,
                              std::string_view structure, std::string_view what,
                              std::string_view option) {
  std::string shim = given.empty() ? self_dir() + "/" + std::string(file) : absolute_path(given);
  if (access(shim.c_str(), R_OK) != 0) {
    return make_error(
        std::string(structure), "", std::nullopt,
        fmt::format("{} {} not found ({}); pass {}", what, shim, std::strerror(errno), option));
  }
  return shim;
}

Result<Child> Child::start(const LaunchSpec& spec, std::string_view structure) {
  auto fail = [&](std::string_view what) {
    return make_error(std::string(structure), "", std::nullopt,
                      fmt::format("{}: {}", what, std::strerror(errno)));
  };
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = child_environment(spec);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  int out[2] = {-1, -1}, err[2] = {-1, -1}, go[2] = {-1, -1};
  std::lock_guard<std::mutex> start_lock(g_start_mu);
  if (spec.output == ChildOutput::kCapture && pipe2(out, O_CLOEXEC) != 0) return fail("pipe");
  if (pipe2(err, O_CLOEXEC | O_NONBLOCK) != 0 ||
      (spec.catch_crashes && pipe2(go, O_CLOEXEC) != 0)) {
    Error e = fail("pipe");
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return e;
  }
  Child c;
  c.own_group_ = spec.own_group;
  c.out_fd_ = out[0];
  subreaper_hold();
  c.subreaper_ = true;
  pid_t pid = fork();
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), out[1], err[1], go);
  if (pid < 0) {
    Error e = fail("fork");
    for (int fd : {err[0], err[1], out[1], go[0], go[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return e;
  }
  c.pid_ = pid;
  if (go[0] >= 0) {
    ::close(go[0]);
    c.seize(go[1]);
  }
  ::close(err[1]);
  if (out[1] >= 0) ::close(out[1]);
  if (spec.own_group) setpgid(pid, pid);  // as the child does: whichever runs first
  c.err_fd_ = err[0];
  return c;
}

// The child waits before its exec until go_w is closed.
void Child::seize(int go_w) {
  if (ptrace(PTRACE_SEIZE, pid_, nullptr, kSeizeOptions) == 0) {
    traced_ = true;
  } else {
    crash_note_ = fmt::format(
        "no crash report: ptrace(PTRACE_SEIZE) of the command: {} (ptrace may be restricted: "
        "/proc/sys/kernel/yama/ptrace_scope, a container's seccomp profile)",
        std::strerror(errno));
  }
  ::close(go_w);
}

void Child::on_stop(pid_t tid, int st) {
  last_stop_ns_ = static_cast<int64_t>(monotonic_ns());
  int sig = WSTOPSIG(st);
  int event = (st >> 16) & 0xff;
  if (event == PTRACE_EVENT_STOP) {
    // A new tracee's first stop, or a group-stop (stays stopped until SIGCONT).
    bool first = started_.insert(tid).second;
    if (!first && is_stop_signal(sig)) {
      ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
    } else {
      ptrace(PTRACE_CONT, tid, nullptr, nullptr);
    }
    return;
  }
  if (event != 0) {  // clone, fork, vfork, exec
    ptrace(PTRACE_CONT, tid, nullptr, nullptr);
    return;
  }
  // Signal-delivery-stop: a fatal one is read before the program's handler sees it; a fault is
  // kept over a signal sent (a handler that re-raises, abort() after a fault).
  if (is_crash_signal(sig) && (!crash_ || crash_->sent)) {
    CrashReport c = capture_crash(tid, sig);
    if (!crash_ || !c.sent) crash_ = std::move(c);
  }
  ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(sig)));
}

Child::Child(Child&& o) noexcept
    : pid_(o.pid_),
      own_group_(o.own_group_),
      exec_errno_(o.exec_errno_),
      done_(o.done_),
      status_(o.status_),
      out_fd_(o.out_fd_),
      err_fd_(o.err_fd_),
      output_(std::move(o.output_)),
      subreaper_(o.subreaper_),
      traced_(o.traced_),
      crash_(std::move(o.crash_)),
      crash_note_(std::move(o.crash_note_)),
      started_(std::move(o.started_)),
      last_stop_ns_(o.last_stop_ns_) {
  o.pid_ = -1;
  o.traced_ = false;
  o.out_fd_ = o.err_fd_ = -1;
  o.subreaper_ = false;
}

Child::~Child() {
  if (pid_ > 0 && !done_) {
    kill();
    if (traced_) {
      // Traced threads are reaped one by one; the command's own end comes after its threads'.
      while (reap(true) == Reaped::kOne && !done_) {
      }
    } else {
      waitpid(pid_, nullptr, 0);
    }
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
  if (subreaper_) subreaper_release();
}

Child::Reaped Child::reap(bool block) {
  int st = 0;
  int flags = (block ? 0 : WNOHANG) | (traced_ ? __WALL : 0);
  pid_t w = waitpid(own_group_ ? -pid_ : -1, &st, flags);
  if (w < 0) return errno == EINTR ? Reaped::kNone : Reaped::kAllGone;
  if (w == 0) return Reaped::kNone;
  if (traced_ && WIFSTOPPED(st)) {
    on_stop(w, st);
    return Reaped::kOne;
  }
  if (w == pid_ && (WIFEXITED(st) || WIFSIGNALED(st))) {
    done_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    if (crash_) crash_->exit_status = status_;
    // The child wrote its errno before it exited, if exec failed (the pipe does not block).
    int e = 0;
    if (err_fd_ >= 0 && ::read(err_fd_, &e, sizeof e) == static_cast<ssize_t>(sizeof e)) {
      exec_errno_ = e;
    }
  }
  return Reaped::kOne;
}

void Child::kill() {
  if (pid_ <= 0) return;
  if (own_group_) ::kill(-pid_, SIGKILL);
  if (!done_) ::kill(pid_, SIGKILL);
}

bool Child::pump_output(int timeout_ms) {
  if (out_fd_ < 0) return false;
  pollfd pf{out_fd_, POLLIN, 0};
  if (poll(&pf, 1, timeout_ms) <= 0) return true;
  char buf[65536];
  ssize_t n = ::read(out_fd_, buf, sizeof buf);
  if (n > 0) {
    if (output_.size() < kCaptureMax) output_.append(buf, static_cast<size_t>(n));
    return true;
  }
  ::close(out_fd_);
  out_fd_ = -1;
  return false;
}

void Child::drain_output() {
  if (out_fd_ < 0) return;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(out_fd_, buf, sizeof buf)) > 0) output_.append(buf, static_cast<size_t>(n));
  ::close(out_fd_);
  out_fd_ = -1;
}

WaitEnd Child::wait(const Watch& w) {
  auto t0 = std::chrono::steady_clock::now();
  WaitEnd how = WaitEnd::kDone;
  while (true) {
    if (how == WaitEnd::kDone) {
      if (w.time_limit_s > 0 && seconds_since(t0) >= w.time_limit_s) {
        how = WaitEnd::kTimeLimit;
      } else if (w.end_now && w.end_now()) {
        how = WaitEnd::kEnded;
      }
      if (how != WaitEnd::kDone) kill();
    }
    // Ended without a group of its own: what the command left behind is not waited for.
    if (how != WaitEnd::kDone && !own_group_ && done_) break;
    Reaped r = reap(w.poll_ms == 0);
    if (r == Reaped::kAllGone) break;
    if (r == Reaped::kOne) continue;  // reap all there is before anything else
    if (done_ && w.end_rest_with_command && own_group_) ::kill(-pid_, SIGKILL);
    int nap = w.poll_ms;
    if (traced_ && nap > 1 &&
        static_cast<int64_t>(monotonic_ns()) - last_stop_ns_ < kBusyAfterStopNs)
      nap = 1;
    if (nap > 0 && !pump_output(nap)) usleep(static_cast<useconds_t>(nap) * 1000);
  }
  drain_output();
  if (subreaper_) {
    subreaper_release();
    subreaper_ = false;
  }
  return how;
}

}  // namespace cudatool::record
