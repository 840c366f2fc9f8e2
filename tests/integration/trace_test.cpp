// `cudatool trace` in both modes against nv_client (tests/fixtures/nvtrace), which issues
// NVIDIA-shaped ioctls on fake device nodes from several threads, a forked child and after an
// exec, and prints every call it made with the bytes it passed and got back. The trace must hold
// exactly those calls, with those bytes; crashes and kills must leave a valid trace.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "harness.hpp"
#include "rm/tables.hpp"
#include "trace/trace_file.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// A cudatool run in the background whose stdout (the traced program's) is read line by line.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(p[1], 1);
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
    close(p[1]);
    fd_ = p[0];
  }
  ~Background() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  // Reads stdout until a line holds `marker` (or 30 s pass); returns everything read.
  std::string read_until(const std::string& marker) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (out_.find(marker) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      char buf[4096];
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      out_.append(buf, static_cast<size_t>(n));
    }
    return out_;
  }
  // Reads whatever stdout brings for `ms` milliseconds.
  void read_for(int ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char buf[4096];
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      out_.append(buf, static_cast<size_t>(n));
    }
  }
  // Waits for the exit; returns the wait status. Reads the rest of stdout.
  int wait() {
    read_until("\x01never");
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    return st;
  }
  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string out_;
};

// Whether pid still runs (a zombie waiting for its new parent to reap it does not).
bool running(int pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' &&
         stat[paren + 2] != 'X';
}

int ready_pid(const std::string& out) {
  auto at = out.find("{\"ready\":");
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 9);
}

// Our own reader must agree that the trace is valid (and say why if not). `padded`: the writer
// was killed, the reserved tail of the file is NUL bytes, reported once.
void expect_reader_accepts(const std::string& path, bool want_trailer, bool padded = false) {
  auto r = trace::TraceReader::open(path);
  ASSERT_TRUE(r) << r.error().message();
  trace::Event ev;
  uint64_t n = 0;
  while ((*r)->next(ev)) ++n;
  for (const auto& e : (*r)->diagnostics().items()) {
    if (padded && e.reason.find("NUL bytes") != std::string::npos) {
      padded = false;  // the one expected report
      continue;
    }
    ADD_FAILURE() << e.message();
  }
  EXPECT_FALSE(padded) << "the NUL padding was not reported";
  EXPECT_EQ((*r)->trailer().has_value(), want_trailer);
  if ((*r)->trailer()) {
    EXPECT_EQ((*r)->trailer()->events, n);
  }
}

// The UVM parameter sizes the recording used, from the decoder's tables: the branch of the
// header's driver version by the decoder's rule (the recorders must have chosen the same).
const rm::Tables& branch_of(const json& header) {
  const json& v = header["driver_version"];
  return rm::tables_for_driver(v.is_string() ? v.get<std::string>() : std::string());
}
std::map<uint64_t, uint64_t> uvm_sizes(const rm::Tables& t) {
  std::map<uint64_t, uint64_t> m;
  for (const rm::UvmEntry& u : t.uvm_ioctls()) {
    if (u.params_size >= 0) m[u.nr] = static_cast<uint64_t>(u.params_size);
  }
  return m;
}

class Trace : public ::testing::TestWithParam<std::string> {
 protected:
  std::string mode() const { return GetParam(); }
  std::vector<std::string> cudatool_trace(const std::string& out, const std::string& devs) {
    return {cudatool_bin(), "trace", "--mode",    mode(),      "-q",
            "-o",           out,     "--devices", devs + "/*", "--"};
  }
  std::string name(const std::string& what) const { return mode() + "-" + what; }
};

TEST_P(Trace, RecordsExactlyTheCallsMade) {
  std::string dev = make_fake_devices(name("full"));
  std::string out = temp_dir() + "/" + name("full.jsonl");
  auto argv = cudatool_trace(out, dev);
  argv.insert(argv.end(), {nv_client_bin(), dev, "full"});
  RunResult r = run(argv);
  ASSERT_EQ(r.status, 0) << r.err;
  auto printed = load_printed(r.out);
  ASSERT_GT(printed.size(), 40u) << r.out;
  TraceFile t = load_trace(out);
  EXPECT_TRUE(t.bad_lines.empty());
  EXPECT_EQ(t.header["cudatool_trace"], trace::kFormatVersion);
  EXPECT_EQ(t.header["mode"], mode());
  EXPECT_EQ(t.header["argv"][0], nv_client_bin());
  EXPECT_EQ(resolve_uvm_table_sizes(printed, uvm_sizes(branch_of(t.header))), 2u);
  for (const auto& p : match_exactly(printed, t.events)) ADD_FAILURE() << p;
  // The comparison can fail: one nested byte changed, one call dropped, one call invented.
  for (int change = 0; change < 3; ++change) {
    auto wrong = t.events;
    auto it = std::find_if(wrong.begin(), wrong.end(), [](const json& e) {
      return e.contains("nested") && e["nested"][0].contains("pre");
    });
    ASSERT_NE(it, wrong.end());
    if (change == 0) {
      std::string pre = (*it)["nested"][0]["pre"];
      pre[0] = pre[0] == '0' ? '1' : '0';
      (*it)["nested"][0]["pre"] = pre;
    } else if (change == 1) {
      wrong.erase(it);
    } else {
      wrong.push_back(*it);
    }
    EXPECT_FALSE(match_exactly(printed, wrong).empty()) << "change " << change;
  }

  // Threads, a forked child and the image after exec all appear.
  std::set<int> tids, pids;
  for (const auto& e : printed) {
    tids.insert(e["tid"].get<int>());
    pids.insert(e["pid"].get<int>());
  }
  EXPECT_GE(tids.size(), 5u);  // main, three workers, the child
  EXPECT_EQ(pids.size(), 2u);  // the program (before and after exec) and its child
  ASSERT_TRUE(t.trailer.is_object());
  EXPECT_EQ(t.trailer["reason"], "exit");
  EXPECT_EQ(t.trailer["exit_status"], 0);
  EXPECT_EQ(t.trailer["events"], t.events.size());
  // The main process's exit is recorded in both modes.
  bool main_exit = false;
  for (const auto& e : t.events) {
    if (e["sys"] == "exit" && e["pid"] == printed[0]["pid"] && e["tid"] == printed[0]["pid"]) {
      main_exit = e["ret"] == 0;
    }
  }
  EXPECT_TRUE(main_exit);
  if (mode() == "preload") {
    // Device ioctls per route, as nv_client made them.
    uint64_t via_ioctl = 0, via_syscall = 0;
    for (const auto& e : printed) {
      if (e["sys"] != "ioctl") continue;
      (e["route"] == "syscall" ? via_syscall : via_ioctl) += 1;
    }
    EXPECT_EQ(t.trailer["routes"]["ioctl"], via_ioctl);
    EXPECT_EQ(t.trailer["routes"]["syscall"], via_syscall);
    EXPECT_EQ(t.trailer.value("lost", 0), 0);
  }
  expect_reader_accepts(out, true);
}

// UVM requests carry no size: each recorder reads the argument by the UVM size table of the
// driver branch it picked from the version file at the start (here a copy named by
// $CUDATOOL_DRIVER_VERSION_FILE), the decoder's rule; requests the table does not know are read
// with a bound. Recorded sizes are compared with the decoder's table of that branch.
TEST_P(Trace, UvmArgumentSizesFollowTheDriverBranch) {
  std::string dev = make_fake_devices(name("uvm"));
  struct Case {
    std::string line;     // the version file's first line ("": no file)
    std::string version;  // the driver version the header must say
  };
  std::vector<Case> cases{
      {"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jul 16 2025", "535.261.03"},
      {"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
       "(dvs-builder@U16-I1-N07-12-3)  Thu Jan  1 00:00:00 UTC 2026",
       "580.159.04"},
      {"", ""}};
  std::map<std::string, uint64_t> map_external;  // recorded size of UVM_MAP_EXTERNAL_ALLOCATION
  for (const Case& c : cases) {
    std::string vf = temp_dir() + "/" + name("version-" + c.version);
    if (!c.line.empty()) write_temp(name("version-" + c.version), c.line + "\n");
    std::string out = temp_dir() + "/" + name("uvm-" + c.version + ".jsonl");
    std::vector<std::string> argv{
        "/usr/bin/env",
        "CUDATOOL_DRIVER_VERSION_FILE=" + (c.line.empty() ? temp_dir() + "/no-such-file" : vf)};
    auto tail = cudatool_trace(out, dev);
    argv.insert(argv.end(), tail.begin(), tail.end());
    argv.insert(argv.end(), {nv_client_bin(), dev, "uvm"});
    RunResult r = run(argv);
    ASSERT_EQ(r.status, 0) << r.err;
    TraceFile t = load_trace(out);
    if (c.version.empty()) {
      EXPECT_TRUE(t.header["driver_version"].is_null());
    } else {
      EXPECT_EQ(t.header["driver_version"], c.version);
    }
    const rm::Tables& branch = branch_of(t.header);
    if (c.version.empty()) {
      EXPECT_EQ(&branch, &rm::all_branches().back());  // the newest
    }
    size_t checked = 0, bounded = 0;
    for (const json& e : t.events) {
      if (e["sys"] != "ioctl") continue;
      uint64_t req = std::stoull(e["req"].get<std::string>(), nullptr, 16);
      const json& a = e["arg"];
      if (const rm::UvmEntry* u = branch.find_uvm(static_cast<uint32_t>(req))) {
        EXPECT_EQ(a["size"], u->params_size) << branch.info().id << " " << u->name;
        EXPECT_FALSE(a.value("bounded", false)) << u->name;
        if (u->name == "UVM_MAP_EXTERNAL_ALLOCATION") map_external[c.version] = a["size"];
        ++checked;
      } else {
        EXPECT_EQ(a["size"], 4096) << "request " << req << " is not in the table: bounded read";
        EXPECT_TRUE(a.value("bounded", false));
        ++bounded;
      }
    }
    EXPECT_EQ(checked, 3u);
    EXPECT_EQ(bounded, 1u);
    auto printed = load_printed(r.out);
    EXPECT_EQ(resolve_uvm_table_sizes(printed, uvm_sizes(branch)), 2u);
    for (const auto& p : match_exactly(printed, t.events)) ADD_FAILURE() << c.version << ": " << p;
  }
  // The branch mattered: UVM_MAP_EXTERNAL_ALLOCATION_PARAMS is not the same size in 535 and 580.
  EXPECT_NE(map_external["535.261.03"], map_external["580.159.04"]);
}

TEST_P(Trace, TraceeSegfaultLeavesAValidTrace) {
  std::string dev = make_fake_devices(name("segv"));
  std::string out = temp_dir() + "/" + name("segv.jsonl");
  auto argv = cudatool_trace(out, dev);
  argv.insert(argv.end(), {nv_client_bin(), dev, "segv"});
  RunResult r = run(argv);
  EXPECT_EQ(r.status, 128 + SIGSEGV) << r.err;
  auto printed = load_printed(r.out);
  ASSERT_EQ(printed.size(), 5u) << r.out;  // execve, open, three ioctls
  TraceFile t = load_trace(out);
  for (const auto& p : match_exactly(printed, t.events)) ADD_FAILURE() << p;
  ASSERT_TRUE(t.trailer.is_object());
  EXPECT_EQ(t.trailer["reason"], "signal");
  EXPECT_EQ(t.trailer["exit_status"], -SIGSEGV);
  expect_reader_accepts(out, true);
}

TEST_P(Trace, TraceeSigkilledLeavesAValidTrace) {
  std::string dev = make_fake_devices(name("kill"));
  std::string out = temp_dir() + "/" + name("kill.jsonl");
  auto argv = cudatool_trace(out, dev);
  argv.insert(argv.end(), {nv_client_bin(), dev, "hang"});
  Background bg(argv);
  int pid = ready_pid(bg.read_until("\"ready\""));
  ASSERT_GT(pid, 0) << bg.out();
  kill(pid, SIGKILL);
  int st = bg.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGKILL);
  TraceFile t = load_trace(out);
  for (const auto& p : match_exactly(load_printed(bg.out()), t.events)) ADD_FAILURE() << p;
  ASSERT_TRUE(t.trailer.is_object());
  EXPECT_EQ(t.trailer["exit_status"], -SIGKILL);
  expect_reader_accepts(out, true);
}

TEST_P(Trace, RecorderSigtermedPassesItOnAndLeavesAValidTrace) {
  std::string dev = make_fake_devices(name("term"));
  std::string out = temp_dir() + "/" + name("term.jsonl");
  auto argv = cudatool_trace(out, dev);
  argv.insert(argv.end(), {nv_client_bin(), dev, "hang"});
  Background bg(argv);
  ASSERT_GT(ready_pid(bg.read_until("\"ready\"")), 0) << bg.out();
  kill(bg.pid(), SIGTERM);
  int st = bg.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM);
  TraceFile t = load_trace(out);
  for (const auto& p : match_exactly(load_printed(bg.out()), t.events)) ADD_FAILURE() << p;
  ASSERT_TRUE(t.trailer.is_object());
  EXPECT_EQ(t.trailer["reason"], "signal");
  EXPECT_EQ(t.trailer["exit_status"], -SIGTERM);
  expect_reader_accepts(out, true);
}

TEST_P(Trace, SecondSigtermEndsTheRecording) {
  std::string dev = make_fake_devices(name("term2"));
  std::string out = temp_dir() + "/" + name("term2.jsonl");
  auto argv = cudatool_trace(out, dev);
  argv.insert(argv.end(), {nv_client_bin(), dev, "hang-noterm"});
  Background bg(argv);
  int pid = ready_pid(bg.read_until("\"ready\""));
  ASSERT_GT(pid, 0) << bg.out();
  kill(bg.pid(), SIGTERM);  // passed on, and ignored by the program
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(bg.pid(), SIGTERM);
  int st = bg.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM);
  TraceFile t = load_trace(out);
  for (const auto& p : match_exactly(load_printed(bg.out()), t.events)) ADD_FAILURE() << p;
  ASSERT_TRUE(t.trailer.is_object());
  EXPECT_EQ(t.trailer["reason"], "interrupted");
  expect_reader_accepts(out, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(running(pid)) << "the traced program should have been killed";
}

// The recorders match absolute paths: a relative --devices glob is taken from the directory
// cudatool runs in (it once matched nothing, and the trace held no device call).
TEST_P(Trace, RelativeDeviceGlobsAreTakenFromTheCurrentDirectory) {
  std::string dev = make_fake_devices(name("relative"));
  std::string parent = dev.substr(0, dev.rfind('/'));
  std::string leaf = dev.substr(dev.rfind('/') + 1);
  std::string out = temp_dir() + "/" + name("relative.jsonl");
  RunResult r = run({"sh", "-c",
                     "cd \"$1\" && exec \"$2\" trace --mode \"$3\" -q -o \"$4\" --devices "
                     "\"./$5/*\" -- \"$6\" \"$7\" full",
                     "sh", parent, cudatool_bin(), mode(), out, leaf, nv_client_bin(), dev});
  ASSERT_EQ(r.status, 0) << r.err;
  auto printed = load_printed(r.out);
  ASSERT_GT(printed.size(), 40u) << r.out;
  TraceFile t = load_trace(out);
  EXPECT_EQ(t.header["devices"], dev + "/*") << t.header.dump();
  EXPECT_EQ(resolve_uvm_table_sizes(printed, uvm_sizes(branch_of(t.header))), 2u);
  for (const auto& p : match_exactly(printed, t.events)) ADD_FAILURE() << p;
}

TEST_P(Trace, CommandThatCannotRun) {
  std::string out = temp_dir() + "/" + name("missing.jsonl");
  RunResult r = run(
      {cudatool_bin(), "trace", "--mode", mode(), "-q", "-o", out, "--", "/nonexistent/program"});
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("cannot run '/nonexistent/program'"), std::string::npos) << r.err;
  expect_reader_accepts(out, true);
}

INSTANTIATE_TEST_SUITE_P(Modes, Trace, ::testing::Values("ptrace", "preload"),
                         [](const auto& info) { return info.param; });

TEST(TracePtrace, RecorderSigkilledLeavesCompleteLines) {
  std::string dev = make_fake_devices("ptrace-kill9");
  std::string out = temp_dir() + "/ptrace-kill9.jsonl";
  Background bg({cudatool_bin(), "trace", "-q", "-o", out, "--devices", dev + "/*", "--",
                 nv_client_bin(), dev, "hang"});
  int pid = ready_pid(bg.read_until("\"ready\""));
  ASSERT_GT(pid, 0) << bg.out();
  kill(bg.pid(), SIGKILL);
  bg.wait();
  TraceFile t = load_trace(out);
  EXPECT_TRUE(t.bad_lines.empty());
  EXPECT_GT(t.nul_padding, 0u);  // the mapped writer's reserved space, never cut
  for (const auto& p : match_exactly(load_printed(bg.out()), t.events)) ADD_FAILURE() << p;
  EXPECT_TRUE(t.trailer.is_null());
  expect_reader_accepts(out, false, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(running(pid)) << "PTRACE_O_EXITKILL should have ended the program";
}

TEST(TracePtrace, AttachesToARunningProcessAndDetaches) {
  std::string dev = make_fake_devices("ptrace-attach");
  std::string out = temp_dir() + "/ptrace-attach.jsonl";
  // The program runs untraced: it opens the device, then makes one RM control every 20 ms.
  Background prog({nv_client_bin(), dev, "loop"});
  int pid = ready_pid(prog.read_until("\"ready\""));
  ASSERT_GT(pid, 0) << prog.out();
  Background rec({cudatool_bin(), "trace", "-q", "-o", out, "--devices", dev + "/*", "--pid",
                  std::to_string(pid)});
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  kill(rec.pid(), SIGINT);
  int st = rec.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_TRUE(running(pid)) << "the program must run on after the detach";
  prog.read_for(300);  // what it printed about the calls made while attached
  TraceFile t = load_trace(out);
  ASSERT_TRUE(t.trailer.is_object());
  EXPECT_EQ(t.trailer["reason"], "detached");
  ASSERT_GT(t.events.size(), 5u);
  // Every recorded call is one the program printed (with the device path learnt from /proc).
  auto printed = load_printed(prog.out());
  for (const auto& r : t.events) {
    bool found = false;
    for (const auto& e : printed) found = found || mismatch(e, r).empty();
    EXPECT_TRUE(found) << r.dump();
  }
  expect_reader_accepts(out, true);
}

}  // namespace
}  // namespace cudatool::test

namespace cudatool::test {
namespace {

TEST_P(Trace, SummaryJsonAgreesWithTheTrace) {
  std::string dev = make_fake_devices(name("json"));
  std::string out = temp_dir() + "/" + name("json.jsonl");
  RunResult r = run({cudatool_bin(), "trace", "--mode", mode(), "--json", "-o", out, "--devices",
                     dev + "/*", "--", nv_client_bin(), dev, "segv"});
  EXPECT_EQ(r.status, 128 + SIGSEGV);
  json s = json::parse(r.err);  // stderr: stdout belongs to the traced program
  EXPECT_EQ(s["schema"], "cudatool.trace/1");
  EXPECT_EQ(s["mode"], mode());
  EXPECT_EQ(s["exit_code"], 128 + SIGSEGV);
  EXPECT_EQ(s["exit_status"], -SIGSEGV);
  EXPECT_EQ(s["reason"], "signal");
  TraceFile t = load_trace(out);
  EXPECT_EQ(s["events"], t.events.size());
  std::map<std::string, uint64_t> by_sys;
  for (const auto& e : t.events) ++by_sys[e["sys"].get<std::string>()];
  EXPECT_EQ(s["by_sys"], json(by_sys));
  EXPECT_EQ(s["by_path"][dev + "/nvidiactl"], by_sys["ioctl"] + by_sys["open"]);
  // The text twin says the same.
  RunResult text = run({cudatool_bin(), "trace", "--mode", mode(), "-o", out, "--devices",
                        dev + "/*", "--", nv_client_bin(), dev, "segv"});
  EXPECT_NE(text.err.find(std::to_string(t.events.size()) + " events to " + out), std::string::npos)
      << text.err;
  EXPECT_NE(text.err.find("killed by signal 11"), std::string::npos) << text.err;
}

// The summary's call-stack and not-recorded counts, against the trace itself: every device call
// (an event on a device path, not the exec) with its stack (inline or a stack record), and the
// buffers the recorder could not read (pre_error / post_error), by role.
TEST_P(Trace, SummarySaysWhatHasStacksAndWhatWasNotRecorded) {
  std::string dev = make_fake_devices(name("sum"));
  std::string out = temp_dir() + "/" + name("sum.jsonl");
  RunResult r = run({cudatool_bin(), "trace", "--mode", mode(), "--json", "-o", out, "--devices",
                     dev + "/*", "--", nv_client_bin(), dev, "full"});
  ASSERT_EQ(r.status, 0) << r.err;
  json s = json::parse(r.err);
  TraceFile t = load_trace(out);
  uint64_t device = 0, stacked = 0;
  std::map<std::string, uint64_t> unread;
  for (const json& e : t.events) {
    if (e.value("path", "").empty() || e["sys"] == "execve") continue;
    ++device;
    stacked += e.contains("stack") || e.contains("stack_ref");
    std::vector<json> bufs =
        e.contains("nested") ? e["nested"].get<std::vector<json>>() : std::vector<json>{};
    if (e.contains("arg") && e["arg"].is_object()) bufs.push_back(e["arg"]);
    for (const json& b : bufs) {
      if (b.contains("pre_error") || b.contains("post_error")) ++unread[b["role"]];
    }
  }
  EXPECT_GT(device, 30u);
  EXPECT_EQ(s["device_calls"], device);
  EXPECT_EQ(s["with_stack"], stacked);
  EXPECT_GT(stacked, 0u);
  ASSERT_FALSE(unread.empty()) << "nv_client's bad pointers leave buffers unread";
  for (const auto& [role, n] : unread) {
    EXPECT_EQ(s["unrecorded"][role]["calls"], n) << role << ": " << s["unrecorded"].dump();
  }
  EXPECT_EQ(s["unrecorded"].size(), unread.size()) << s["unrecorded"].dump();
  RunResult text = run({cudatool_bin(), "trace", "--mode", mode(), "-o", out, "--devices",
                        dev + "/*", "--", nv_client_bin(), dev, "full"});
  EXPECT_NE(text.err.find(fmt::format("call stacks: {} of {} device calls", stacked, device)),
            std::string::npos)
      << text.err;
  EXPECT_NE(text.err.find("not recorded: params of " + std::to_string(unread["params"])),
            std::string::npos)
      << text.err;
  RunResult off = run({cudatool_bin(), "trace", "--mode", mode(), "--no-stacks", "-o", out,
                       "--devices", dev + "/*", "--", nv_client_bin(), dev, "full"});
  EXPECT_NE(off.err.find("call stacks: not recorded (--no-stacks)"), std::string::npos) << off.err;
}

// A call made 40 frames below main: its stack is cut at the recorders' limit, 32 frames, and says
// so ("frame limit 32"); the frames it has are the innermost ones (nv_client's deep_call).
TEST_P(Trace, StacksDeeperThanTheLimitAreCutAndSaySo) {
  std::string dev = make_fake_devices(name("deep"));
  std::string out = temp_dir() + "/" + name("deep.jsonl");
  RunResult r = run({cudatool_bin(), "trace", "--mode", mode(), "-q", "-o", out, "--devices",
                     dev + "/*", "--", nv_client_bin(), dev, "deep"});
  ASSERT_EQ(r.status, 0) << r.err;
  RunResult d = run({cudatool_bin(), "decode", out, "--json", "--stacks"}, 120);
  ASSERT_EQ(d.status, 0) << d.err;
  int seen = 0;
  std::istringstream lines(d.out);
  for (std::string line; std::getline(lines, line);) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object() || !e.contains("cmd") || e["cmd"] != "0x20800702") continue;
    ++seen;
    ASSERT_TRUE(e["stack"].is_array()) << line.substr(0, 500);
    EXPECT_EQ(e["stack"].size(), 32u);
    EXPECT_EQ(e["stack_error"], "frame limit 32") << e["stack_error"];
    size_t in_deep = 0;
    for (const json& f : e["stack"]) in_deep += f["function"] == "deep_call";
    EXPECT_GE(in_deep, 28u) << e["stack"].dump();  // all but libc's, the shim's and rm_control's
  }
  EXPECT_EQ(seen, 1) << d.out.substr(0, 1000);
}

TEST(TraceUsage, BadArgumentsAreOneLineErrorsWithStatus2) {
  std::string out = temp_dir() + "/usage.jsonl";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"trace", "-o", out}, "no command to trace"},
      {{"trace", "--mode", "strace", "-o", out, "--", "true"}, "--mode strace"},
      {{"trace", "--cpu", "9999", "-o", out, "--", "true"}, "--cpu"},
      {{"trace", "--cpu", "sometimes", "-o", out, "--", "true"}, "--cpu"},
      {{"trace", "-o", "/nonexistent-dir/t.jsonl", "--", "true"}, "/nonexistent-dir/t.jsonl"},
      {{"trace", "--pid", "1", "-o", out, "--", "true"}, "not both"},
      {{"trace", "--mode", "preload", "--pid", "1", "-o", out}, "--pid needs --mode ptrace"},
      {{"trace", "--pid", "999999999", "-o", out}, "no process 999999999"},
      {{"trace", "--mode", "preload", "--preload-lib", "/nonexistent.so", "-o", out, "--", "true"},
       "/nonexistent.so"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{cudatool_bin()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    RunResult r = run(argv);
    EXPECT_EQ(r.status, 2) << c.message << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  RunResult help = run({cudatool_bin(), "trace", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Examples:"), std::string::npos);
}

}  // namespace
}  // namespace cudatool::test
