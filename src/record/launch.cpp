#include "record/launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

extern char** environ;

namespace cudatool::record {
namespace {

constexpr size_t kCaptureMax = 16u << 20;

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

// The command's environment: this process's, with spec's changes applied as setenv and unsetenv
// would (a variable set that exists keeps its place, a new one goes last), LD_PRELOAD first.
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

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Between fork and exec: async-signal-safe calls only (a parallel launcher may have threads).
[[noreturn]] void exec_child(const LaunchSpec& spec, char* const* argv, char* const* envp,
                             int out_w, int err_w) {
  if (spec.own_group) setpgid(0, 0);
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

}  // namespace

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
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (spec.output == ChildOutput::kCapture && pipe2(out, O_CLOEXEC) != 0) return fail("pipe");
  if (pipe2(err, O_CLOEXEC | O_NONBLOCK) != 0) {
    Error e = fail("pipe");
    if (out[0] >= 0) {
      ::close(out[0]);
      ::close(out[1]);
    }
    return e;
  }
  Child c;
  c.own_group_ = spec.own_group;
  c.out_fd_ = out[0];
  subreaper_hold();
  c.subreaper_ = true;
  pid_t pid = fork();
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), out[1], err[1]);
  if (pid < 0) {
    Error e = fail("fork");
    for (int fd : {err[0], err[1], out[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return e;
  }
  ::close(err[1]);
  if (out[1] >= 0) ::close(out[1]);
  if (spec.own_group) setpgid(pid, pid);  // as the child does: whichever runs first
  c.pid_ = pid;
  c.err_fd_ = err[0];
  return c;
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
      subreaper_(o.subreaper_) {
  o.pid_ = -1;
  o.out_fd_ = o.err_fd_ = -1;
  o.subreaper_ = false;
}

Child::~Child() {
  if (pid_ > 0 && !done_) {
    kill();
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
  if (subreaper_) subreaper_release();
}

Child::Reaped Child::reap(bool block) {
  int st = 0;
  pid_t w = waitpid(own_group_ ? -pid_ : -1, &st, block ? 0 : WNOHANG);
  if (w < 0) return errno == EINTR ? Reaped::kNone : Reaped::kAllGone;
  if (w == 0) return Reaped::kNone;
  if (w == pid_ && (WIFEXITED(st) || WIFSIGNALED(st))) {
    done_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
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
    if (w.poll_ms > 0 && !pump_output(w.poll_ms)) usleep(static_cast<useconds_t>(w.poll_ms) * 1000);
  }
  drain_output();
  if (subreaper_) {
    subreaper_release();
    subreaper_ = false;
  }
  return how;
}

}  // namespace cudatool::record
