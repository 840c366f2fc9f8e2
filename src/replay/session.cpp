#include "replay/session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "replay/environment.hpp"
#include "replay/session_parts.hpp"

namespace cudatool::replay {
namespace {

Error err(std::string what) {
  return make_error("replay", "", std::nullopt, std::move(what));
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

Status write_whole(const std::string& path, const void* data, size_t n) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return err(fmt::format("{}: {}", path, std::strerror(errno)));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) {
      ::close(fd);
      return err(fmt::format("write {}: {}", path, std::strerror(errno)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  ::close(fd);
  return Status::success();
}

// A file mapped shared with the shims; unmapped when done.
class SharedFile {
 public:
  ~SharedFile() {
    if (p_ != nullptr) munmap(p_, size_);
  }
  Status create(const std::string& path, uint64_t size) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return err(fmt::format("{}: {}", path, std::strerror(errno)));
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
      ::close(fd);
      return err(fmt::format("ftruncate {}: {}", path, std::strerror(errno)));
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return err(fmt::format("mmap {}: {}", path, std::strerror(errno)));
    p_ = static_cast<uint8_t*>(p);
    size_ = size;
    return Status::success();
  }
  [[nodiscard]] uint8_t* data() const { return p_; }
  [[nodiscard]] uint64_t size() const { return size_; }

 private:
  uint8_t* p_ = nullptr;
  uint64_t size_ = 0;
};

class TempDir {
 public:
  ~TempDir() {
    if (!path_.empty() && !keep_) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  Status create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cudatool-replay-XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    if (mkdtemp(name.data()) == nullptr)
      return err(fmt::format("{}: {}", tmpl, std::strerror(errno)));
    path_ = name.data();
    return Status::success();
  }
  // --keep DIR: the run works in DIR itself (made by prepare_keep_dir) and leaves it there.
  void use(std::string path) {
    path_ = std::move(path);
    keep_ = true;
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool keep_ = false;
};

// --keep DIR: a new directory, or an empty one, made absolute. Never anything that holds files:
// the replay writes its answer table, log and environment tree there.
Result<std::string> prepare_keep_dir(const std::string& keep) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(keep, ec);
  if (ec) return err(fmt::format("--keep {}: {}", keep, ec.message()));
  auto st = std::filesystem::symlink_status(p, ec);
  if (std::filesystem::exists(st)) {
    if (!std::filesystem::is_directory(st) || !std::filesystem::is_empty(p, ec) || ec) {
      return err(
          fmt::format("--keep {}: exists and is not an empty directory (the replay writes "
                      "its answer table, log and environment tree there); name a new "
                      "path or an empty directory",
                      keep));
    }
    return p.string();
  }
  if (mkdir(p.c_str(), 0755) != 0) {
    return err(fmt::format("--keep {}: cannot create: {}", keep, std::strerror(errno)));
  }
  return p.string();
}

constexpr uint64_t kLogCapacity = uint64_t{1} << 32;  // sparse
constexpr uint64_t kLogHead = 64;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kAnswered:
      return "answered";
    case Outcome::kOutOfOrder:
      return "out_of_order";
    case Outcome::kFreelike:
      return "unrecorded_succeeded";
    case Outcome::kTwin:
      return "unrecorded_twin";
    case Outcome::kNotSupported:
      return "unrecorded_not_supported";
    case Outcome::kNoDevice:
      return "no_device";
    case Outcome::kPassed:
      return "unrecorded_carried_out";
  }
  return "?";
}

Result<ReplayReport> run_replay(const Recording& rec, const ReplayOptions& o) {
  if (o.argv.empty()) return err("no command to replay");
  std::string shim = o.shim.empty() ? self_dir() + "/libcudatool_replay.so" : absolute(o.shim);
  if (access(shim.c_str(), R_OK) != 0) {
    return err(
        fmt::format("replay shim {} not found ({}); pass --shim", shim, std::strerror(errno)));
  }
  TempDir dir;
  if (o.keep_dir.empty()) {
    if (Status s = dir.create(); !s.ok()) return s.error();
  } else {
    auto kept = prepare_keep_dir(o.keep_dir);
    if (!kept) return kept.error();
    dir.use(std::move(*kept));
  }
  auto env = build_environment(rec, dir.path() + "/root");
  if (!env) return env.error();
  TableOptions to;
  to.injections = o.injections;
  to.overrides = o.overrides;
  to.root = env->root;
  to.env_globs = env->globs;
  to.devices = env->devices;
  auto table = build_answer_table(rec, to);
  if (!table) return table.error();
  std::string table_path = dir.path() + "/answers.bin";
  std::string state_path = dir.path() + "/state.bin";
  std::string log_path = dir.path() + "/log.bin";
  if (Status s = write_whole(table_path, table->bytes.data(), table->bytes.size()); !s.ok()) {
    return s.error();
  }
  uint32_t n_events = static_cast<uint32_t>(table->calls.size());
  SharedFile state, log;
  if (Status s = state.create(state_path, sizeof(rp_state) + n_events); !s.ok()) return s.error();
  if (Status s = log.create(log_path, kLogCapacity); !s.ok()) return s.error();
  auto* st = reinterpret_cast<rp_state*>(state.data());
  st->n_events = n_events;
  __atomic_store_n(&st->magic, RP_STATE_MAGIC, __ATOMIC_RELEASE);
  auto* lh = reinterpret_cast<rp_log_head*>(log.data());
  lh->write_off = kLogHead;
  lh->capacity = kLogCapacity;
  __atomic_store_n(&lh->magic, RP_LOG_MAGIC, __ATOMIC_RELEASE);

  // The program's output: inherited, discarded, or captured through a pipe.
  int out_pipe[2] = {-1, -1};
  if (o.capture_output && pipe2(out_pipe, O_CLOEXEC) != 0) {
    return err(std::string("pipe: ") + std::strerror(errno));
  }
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) return err(std::string("pipe: ") + std::strerror(errno));
  std::string preload = shim;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += ":" + std::string(old);
  }
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  uint64_t t0 = now_ns();
  pid_t pid = fork();
  if (pid < 0) return err(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(errpipe[0]);
    setpgid(0, 0);
    if (o.capture_output) {
      dup2(out_pipe[1], 1);
      dup2(out_pipe[1], 2);
    } else if (o.quiet_program) {
      int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
      }
    }
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv(RP_ENV_TABLE, table_path.c_str(), 1);
    setenv(RP_ENV_STATE, state_path.c_str(), 1);
    setenv(RP_ENV_LOG, log_path.c_str(), 1);
    setenv(RP_ENV_ROOT, env->root.c_str(), 1);
    execvp(argv[0], argv.data());
    int e = errno;
    (void)!write(errpipe[1], &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
  }
  setpgid(pid, pid);
  close(errpipe[1]);
  if (o.capture_output) close(out_pipe[1]);

  ReplayReport rep;
  rep.trace = rec.path;
  rep.argv = o.argv;
  int main_status = 0;
  bool main_done = false, stalled = false;
  uint64_t last_progress = ~uint64_t{0}, last_change = now_ns();
  std::string captured;
  while (true) {
    int status = 0;
    pid_t w = waitpid(-1, &status, WNOHANG);
    if (w == pid && (WIFEXITED(status) || WIFSIGNALED(status))) {
      main_status = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      main_done = true;
    }
    if (w < 0 && errno == ECHILD) break;
    if (w > 0) continue;
    if (main_done) {
      // Descendants left behind: give them the deadline too, then end them.
      kill(-pid, SIGKILL);
    }
    uint64_t p = __atomic_load_n(&st->progress, __ATOMIC_ACQUIRE);
    uint64_t now = now_ns();
    if (p != last_progress) {
      last_progress = p;
      last_change = now;
    } else if (!main_done && o.deadline_s > 0 &&
               static_cast<double>(now - last_change) / 1e9 >= o.deadline_s) {
      Stall s;
      s.idle_s = static_cast<double>(now - last_change) / 1e9;
      inspect_stall(pid, rec, *st, s);
      rep.stall = std::move(s);
      stalled = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    if (o.capture_output && out_pipe[0] >= 0) {
      pollfd pf{out_pipe[0], POLLIN, 0};
      if (poll(&pf, 1, 20) > 0) {
        char buf[65536];
        ssize_t n = read(out_pipe[0], buf, sizeof buf);
        if (n > 0) {
          if (captured.size() < (16u << 20)) captured.append(buf, static_cast<size_t>(n));
        } else {
          close(out_pipe[0]);
          out_pipe[0] = -1;
        }
      }
    } else {
      usleep(20000);
    }
  }
  if (o.capture_output && out_pipe[0] >= 0) {
    char buf[65536];
    ssize_t n;
    while ((n = read(out_pipe[0], buf, sizeof buf)) > 0)
      captured.append(buf, static_cast<size_t>(n));
    close(out_pipe[0]);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  rep.wall_s = static_cast<double>(now_ns() - t0) / 1e9;
  int exec_errno = 0;
  if (read(errpipe[0], &exec_errno, sizeof exec_errno) != static_cast<ssize_t>(sizeof exec_errno)) {
    exec_errno = 0;
  }
  close(errpipe[0]);
  if (exec_errno != 0) {
    return err(fmt::format("cannot run '{}': {}", o.argv[0], std::strerror(exec_errno)));
  }
  rep.program_output = std::move(captured);
  rep.exit_status = main_status;
  rep.end = stalled ? "deadline" : main_status < 0 ? "signal" : "exit";
  auto parsed = parse_log(ByteView(log.data(), log.size()));
  if (!parsed) return parsed.error();
  build_report(rec, *table, *parsed, *st, state.data() + sizeof(rp_state), *env, rep);
  if (!o.output.empty()) {
    if (Status s = write_replayed_trace(rec, *table, *parsed, rep, o.output); !s.ok()) {
      return s.error();
    }
    rep.output = o.output;
  }
  return rep;
}

}  // namespace cudatool::replay
