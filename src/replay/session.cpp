#include "replay/session.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "base/clock.hpp"
#include "record/launch.hpp"
#include "replay/environment.hpp"
#include "replay/session_parts.hpp"

namespace cudatool::replay {
namespace {

Error replay_err(std::string what) {
  return make_error("replay", "", std::nullopt, std::move(what));
}

Status write_whole(const std::string& path, const void* data, size_t n) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return replay_err(fmt::format("{}: {}", path, std::strerror(errno)));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) {
      ::close(fd);
      return replay_err(fmt::format("write {}: {}", path, std::strerror(errno)));
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
    if (fd < 0) return replay_err(fmt::format("{}: {}", path, std::strerror(errno)));
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
      ::close(fd);
      return replay_err(fmt::format("ftruncate {}: {}", path, std::strerror(errno)));
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return replay_err(fmt::format("mmap {}: {}", path, std::strerror(errno)));
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
      return replay_err(fmt::format("{}: {}", tmpl, std::strerror(errno)));
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
  if (ec) return replay_err(fmt::format("--keep {}: {}", keep, ec.message()));
  auto st = std::filesystem::symlink_status(p, ec);
  if (std::filesystem::exists(st)) {
    if (!std::filesystem::is_directory(st) || !std::filesystem::is_empty(p, ec) || ec) {
      return replay_err(
          fmt::format("--keep {}: exists and is not an empty directory (the replay writes "
                      "its answer table, log and environment tree there); name a new "
                      "path or an empty directory",
                      keep));
    }
    return p.string();
  }
  if (mkdir(p.c_str(), 0755) != 0) {
    return replay_err(fmt::format("--keep {}: cannot create: {}", keep, std::strerror(errno)));
  }
  return p.string();
}

constexpr uint64_t kLogCapacity = uint64_t{1} << 32;  // sparse
constexpr uint64_t kLogHead = 64;

// The run's private directory: a new temporary one, or --keep's.
Status prepare_dir(const ReplayOptions& o, TempDir& dir) {
  if (o.keep_dir.empty()) return dir.create();
  auto kept = prepare_keep_dir(o.keep_dir);
  if (!kept) return kept.error();
  dir.use(std::move(*kept));
  return Status::success();
}

Result<AnswerTable> make_table(const Recording& rec, const ReplayOptions& o,
                               const Environment& env) {
  return build_answer_table(rec, TableOptions{.injections = o.injections,
                                              .overrides = o.overrides,
                                              .root = env.root,
                                              .env_globs = env.globs,
                                              .devices = env.devices});
}

// The three files shared with the shims (shim_abi/replay_abi.h): the answer table written, the
// shared state and the log mapped here too.
struct RunFiles {
  std::string table_path, state_path, log_path;
  SharedFile state, log;

  Status create(const std::string& dir, const AnswerTable& table) {
    table_path = dir + "/answers.bin";
    state_path = dir + "/state.bin";
    log_path = dir + "/log.bin";
    if (Status s = write_whole(table_path, table.bytes.data(), table.bytes.size()); !s.ok()) {
      return s;
    }
    auto n_events = static_cast<uint32_t>(table.calls.size());
    if (Status s = state.create(state_path, sizeof(rp_state) + n_events); !s.ok()) return s;
    if (Status s = log.create(log_path, kLogCapacity); !s.ok()) return s;
    st()->n_events = n_events;
    __atomic_store_n(&st()->magic, RP_STATE_MAGIC, __ATOMIC_RELEASE);
    auto* lh = reinterpret_cast<rp_log_head*>(log.data());
    lh->write_off = kLogHead;
    lh->capacity = kLogCapacity;
    __atomic_store_n(&lh->magic, RP_LOG_MAGIC, __ATOMIC_RELEASE);
    return Status::success();
  }
  [[nodiscard]] rp_state* st() const { return reinterpret_cast<rp_state*>(state.data()); }
};

record::LaunchSpec launch_spec(const ReplayOptions& o, const std::string& shim,
                               const RunFiles& files, const std::string& root) {
  record::LaunchSpec spec;
  spec.argv = o.argv;
  spec.preload = shim;
  spec.set_env = {{RP_ENV_TABLE, files.table_path},
                  {RP_ENV_STATE, files.state_path},
                  {RP_ENV_LOG, files.log_path},
                  {RP_ENV_ROOT, root},
                  {RP_ENV_EXECUTE, o.execute}};
  spec.dir = o.work_dir;
  spec.own_group = true;  // ended as one, with what it leaves behind
  spec.catch_crashes = o.crash_report;
  spec.fixed_layout = o.fixed_layout;
  spec.output = o.capture_output  ? record::ChildOutput::kCapture
                : o.quiet_program ? record::ChildOutput::kDiscard
                                  : record::ChildOutput::kInherit;
  return spec;
}

// Ends a run whose shims made no progress (answered calls, fake-GPU steps) for deadline_s while
// the command ran; what it was doing is inspected first, into *stall.
std::function<bool()> stall_watch(const record::Child& child, const Recording& rec,
                                  const rp_state& st, double deadline_s,
                                  std::optional<Stall>* stall) {
  return [&child, &rec, &st, deadline_s, stall, last = ~uint64_t{0},
          since = monotonic_ns()]() mutable {
    uint64_t p = __atomic_load_n(&st.progress, __ATOMIC_ACQUIRE);
    uint64_t now = monotonic_ns();
    if (p != last) {
      last = p;
      since = now;
      return false;
    }
    double idle = static_cast<double>(now - since) / 1e9;
    if (child.command_done() || deadline_s <= 0 || idle < deadline_s) return false;
    Stall s;
    s.idle_s = idle;
    inspect_stall(child.pid(), rec, st, s);
    *stall = std::move(s);
    return true;
  };
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

std::string_view deviation_kind_name(DeviationKind k) {
  switch (k) {
    case DeviationKind::kOutOfOrder:
      return "out_of_order";
    case DeviationKind::kUnrecorded:
      return "unrecorded";
    case DeviationKind::kSkipped:
      return "skipped";
    case DeviationKind::kNotReached:
      return "not_reached";
  }
  return "?";
}

std::string_view replay_end_name(ReplayEnd e) {
  switch (e) {
    case ReplayEnd::kExit:
      return "exit";
    case ReplayEnd::kSignal:
      return "signal";
    case ReplayEnd::kDeadline:
      return "deadline";
    case ReplayEnd::kTimeLimit:
      return "time_limit";
    case ReplayEnd::kStopped:
      return "stopped";
    case ReplayEnd::kRefused:
      return "refused";
  }
  return "?";
}

Result<ReplayReport> run_replay(const Recording& rec, const ReplayOptions& o) {
  if (o.argv.empty()) return replay_err("no command to replay");
  auto shim = record::find_shim(o.shim, "libcudatool_replay.so", "replay", "replay shim", "--shim");
  if (!shim) return shim.error();
  TempDir dir;
  if (Status s = prepare_dir(o, dir); !s.ok()) return s.error();
  auto env = build_environment(rec, dir.path() + "/root");
  if (!env) return env.error();
  auto table = make_table(rec, o, *env);
  if (!table) return table.error();
  RunFiles files;
  if (Status s = files.create(dir.path(), *table); !s.ok()) return s.error();

  std::optional<record::FunctionRecorder> fr;
  record::LaunchSpec spec = launch_spec(o, *shim, files, env->root);
  if (!o.functions.empty()) {
    record::FunctionRecorderOptions fo;
    fo.globs = o.functions;
    fo.libraries = record::function_libraries(o.functions_lib, o.argv);
    fo.dir = dir.path();
    fr = record::FunctionRecorder::prepare(fo);
    for (auto& kv : fr->env()) spec.set_env.push_back(std::move(kv));
  }
  uint64_t t0 = monotonic_ns();
  auto child = record::Child::start(spec, "replay");
  if (!child) return child.error();
  ReplayReport rep;
  if (fr) rep.functions = fr->outcome();
  rep.trace = rec.path;
  rep.argv = o.argv;
  rep.execute = o.execute;
  record::Watch watch;
  watch.poll_ms = 20;
  bool stopped = false;
  watch.end_now = [stall = stall_watch(*child, rec, *files.st(), o.deadline_s, &rep.stall), &o,
                   &stopped]() mutable {
    if (o.stop && o.stop()) return stopped = true;
    return stall();
  };
  watch.time_limit_s = o.time_limit_s;
  watch.end_rest_with_command = true;  // descendants left behind are ended with it
  record::WaitEnd how = child->wait(watch);
  bool stalled = how == record::WaitEnd::kEnded;
  rep.wall_s = static_cast<double>(monotonic_ns() - t0) / 1e9;
  if (child->exec_errno() != 0) {
    return replay_err(
        fmt::format("cannot run '{}': {}", o.argv[0], std::strerror(child->exec_errno())));
  }
  rep.program_output = child->take_output();
  rep.exit_status = child->status();
  rep.end = stopped                              ? ReplayEnd::kStopped
            : stalled                            ? ReplayEnd::kDeadline
            : how == record::WaitEnd::kTimeLimit ? ReplayEnd::kTimeLimit
            : child->status() < 0                ? ReplayEnd::kSignal
                                                 : ReplayEnd::kExit;
  rep.crash_note = child->crash_note();
  if (const auto& c = child->crash(); c && c->fatal() && !stalled) {
    rep.crash = *c;
    record::resolve_crash(*rep.crash);
  }
  auto parsed = parse_log(ByteView(files.log.data(), files.log.size()));
  if (!parsed) return parsed.error();
  build_report(rec, *table, *parsed, *files.st(), files.state.data() + sizeof(rp_state), *env, rep);
  if (!o.output.empty()) {
    if (Status s = write_replayed_trace(rec, *table, *parsed, rep, o.output, fr ? &*fr : nullptr,
                                        &rep.functions);
        !s.ok()) {
      return s.error();
    }
    rep.output = o.output;
    if (rep.crash && fr) record::set_functions_since(*rep.crash, o.output);
  }
  return rep;
}

}  // namespace cudatool::replay
