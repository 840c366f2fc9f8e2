// What `trace` says about what the traced program did to the machine, and `trace` run under
// `replay`: a device node the program made in the machine's /dev is said (it stays after the
// trace; README.md shows the safe command, tools/private-dev.sh); one made in a private /dev is
// not. Under replay the device calls are answered inside the program, so ptrace mode would see
// none: trace records in preload mode, or warns when ptrace mode is asked for; and a "--" inside
// replay's command is the command's.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.hpp"
#include "replay_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::string private_dev() {
  return source_dir() + "/tools/private-dev.sh";
}

// Why this machine cannot make a private /dev (and a pid namespace), or "".
std::string cannot_run() {
  if (geteuid() != 0) return "needs root (private mount and pid namespaces, mknod)";
  RunResult r = run({"unshare", "-p", "-f", "--mount-proc", private_dev(), "true"}, 30);
  if (r.status != 0) return "cannot make private mount and pid namespaces: " + r.err;
  return "";
}

constexpr const char* kNode = "/dev/cudatool-test-node";

// `cudatool trace --json` of `mknod kNode c 1 3`, in a private /dev; with `own_init`, in a pid
// namespace of its own too, whose init (a shell that waits for cudatool) sees that /dev as the
// machine's: for cudatool, the node is then in the machine's /dev.
RunResult trace_mknod(bool own_init) {
  std::string out = temp_dir() + "/mknod-" + std::to_string(own_init) + ".jsonl";
  std::vector<std::string> argv;
  if (own_init) argv = {"unshare", "-p", "-f", "--mount-proc"};
  argv.insert(argv.end(),
              {private_dev(), "sh", "-c", "\"$0\" \"$@\"; echo status $?", cudatool_bin(), "trace",
               "--json", "--env", "none", "-o", out, "--", "mknod", kNode, "c", "1", "3"});
  return run(argv, 60);
}

json summary(const RunResult& r) {
  size_t at = r.err.find("{\"schema\":\"cudatool.trace/1\"");
  if (at == std::string::npos) at = r.err.find("{\n  \"schema\"");
  EXPECT_NE(at, std::string::npos) << r.err;
  json j;
  if (at == std::string::npos) return j;
  std::istringstream in(r.err.substr(at));
  in >> j;  // the first document; warnings may follow
  return j;
}

TEST(TraceMachine, ANodeMadeInTheMachinesDevIsSaid) {
  if (std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_FALSE(std::filesystem::exists(kNode));
  RunResult r = trace_mknod(true);
  EXPECT_NE(r.out.find("status 0"), std::string::npos) << r.out << r.err;
  EXPECT_NE(
      r.err.find("warning: device nodes appeared in this machine's /dev while the program ran"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(std::string(kNode) + " (char 1:3)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tools/private-dev.sh"), std::string::npos) << r.err;
  EXPECT_EQ(summary(r)["created_device_nodes"], json::array({std::string(kNode) + " (char 1:3)"}));
  EXPECT_FALSE(std::filesystem::exists(kNode)) << "the test's node reached the real /dev";
}

TEST(TraceMachine, ANodeMadeInAPrivateDevIsNotSaid) {
  if (std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  RunResult r = trace_mknod(false);
  EXPECT_NE(r.out.find("status 0"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.err.find("device nodes appeared"), std::string::npos) << r.err;
  EXPECT_EQ(summary(r)["created_device_nodes"], json::array());
  EXPECT_FALSE(std::filesystem::exists(kNode));
}

// The imported capture (H200, 580.159.04) replayed to the real 580 library, which cuda_probe
// loads under `cudatool trace`.
class TraceUnderReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<DriverBuild> shared = shared_builds();
    ASSERT_FALSE(shared.empty());
    lib_ = shared.front().lib_path;
    CUDATOOL_REQUIRE_BUILD(shared.front());
    trace_ = temp_dir() + "/under-replay-a.jsonl";
    RunResult r = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", trace_,
                       "--driver-version", "580.159.04"});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  // cudatool replay TRACE [replay_opts] -- cudatool trace [trace_opts] -o OUT -- cuda_probe LIB
  // init; returns the run and fills the inner trace.
  RunResult nested(const std::vector<std::string>& replay_opts,
                   const std::vector<std::string>& trace_opts, TraceFile& inner) {
    std::string out = temp_dir() + "/inner-" + std::to_string(n_++) + ".jsonl";
    std::vector<std::string> argv{cudatool_bin(), "replay", trace_};
    argv.insert(argv.end(), replay_opts.begin(), replay_opts.end());
    // The sanitized build's cudatool runs under the replay shim, loaded before the ASan runtime:
    // ASan must be told that this order is meant (no effect in the default build).
    const char* asan = std::getenv("ASAN_OPTIONS");
    std::string asan_options = "ASAN_OPTIONS=" + std::string(asan ? asan : "") +
                               (asan && *asan ? ":" : "") + "verify_asan_link_order=0";
    argv.insert(argv.end(), {"-q", "--", "env", asan_options, cudatool_bin(), "trace", "-q"});
    argv.insert(argv.end(), trace_opts.begin(), trace_opts.end());
    argv.insert(argv.end(), {"-o", out, "--", cuda_probe_bin(), lib_, "init"});
    RunResult r = run(argv, 180);
    inner = load_trace(out);
    return r;
  }
  static size_t ioctls(const TraceFile& t) {
    size_t n = 0;
    for (const auto& e : t.events) n += e.value("sys", "") == "ioctl";
    return n;
  }
  std::string lib_, trace_;
  int n_ = 0;
};

TEST_F(TraceUnderReplay, RecordsInPreloadModeWithANote) {
  TraceFile inner;
  RunResult r = nested({}, {}, inner);
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: under `cudatool replay`"), std::string::npos) << r.err;
  EXPECT_EQ(inner.header["mode"], "preload");
  // cuInit's device calls, answered by the replay, are in the trace.
  EXPECT_GT(ioctls(inner), 50u) << r.err;
  EXPECT_NE(r.out.find("{\"call\":\"cuInit\",\"ret\":0}"), std::string::npos) << r.out;
  // A "--" right after an option's value (--inject takes one) still starts replay's command.
  r = nested(
      {"--deadline", "60", "--inject", "cmd=NV2080_CTRL_CMD_FB_GET_INFO_V2,nth=1,status=NV_OK"}, {},
      inner);
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  EXPECT_GT(ioctls(inner), 50u) << r.err;
}

TEST_F(TraceUnderReplay, PtraceModeAskedForIsWarnedAbout) {
  TraceFile inner;
  RunResult r = nested({}, {"--mode", "ptrace"}, inner);
  EXPECT_NE(r.err.find("warning: under `cudatool replay`"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--mode preload"), std::string::npos) << r.err;
  EXPECT_EQ(inner.header["mode"], "ptrace");
  EXPECT_EQ(ioctls(inner), 0u) << "ptrace sees none of the answered calls";
}

}  // namespace
}  // namespace cudatool::test
