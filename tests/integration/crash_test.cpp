// Crash reports (docs/tracing.md and docs/replay.md, "Crash reports"): the crash fixture
// (tests/fixtures/crash: a libcuda-shaped library whose cuFixCrash makes one RM control and then
// writes through a null pointer in crash_store) under `trace` in both modes and under `replay`,
// with and without a SIGSEGV handler of the program's own that re-raises. The names a report
// must give come from `nm` of the fixture library. Then the real libcuda 580 under replay with an
// answer that makes it die of SIGSEGV inside cuInit (SKIPPED without the library), and
// `replay --bisect` classifying that crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "replay_support.hpp"
#include "stacks_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

std::string crash_lib() {
  return fixtures_dir() + "/crash/lib/libcuda.so.1";
}
std::string crash_client() {
  return fixtures_dir() + "/crash/crash_client";
}

// The report's frames named as nm names the fixture library's functions: frame 0 is crash_store
// (where the null store is), then crash_middle, then cuFixCrash, the API call in progress.
void expect_fixture_crash(const json& c, bool handler) {
  ASSERT_TRUE(c.is_object()) << c.dump();
  auto fns = nm_functions(crash_lib());
  EXPECT_EQ(c["signal"], 11);
  EXPECT_EQ(c["signal_name"], "SIGSEGV");
  EXPECT_EQ(c["si_code_name"], "SEGV_MAPERR");
  EXPECT_EQ(c["sent"], false);
  EXPECT_EQ(c["fault_addr"], "0x0");
  EXPECT_EQ(c["handler_ran"], handler);
  EXPECT_EQ(c["exit_status"], -11);
  ASSERT_GE(c["frames"].size(), 3u) << c.dump(2);
  std::vector<std::string> named;
  for (const json& f : c["frames"]) {
    if (f["module"] != "libcuda.so.1") continue;
    // Frame 0 is the faulting instruction itself; the others are return addresses (after the
    // call: the function is the one before).
    uint64_t off = json_hex(f["offset"]);
    const NmFunction* fn = nm_find(fns, named.empty() ? off : off - 1);
    ASSERT_NE(fn, nullptr) << "nm has no function at " << f.dump();
    EXPECT_EQ(f["function"], fn->name) << f.dump();
    EXPECT_EQ(json_hex(f["function_offset"]), off - fn->start) << f.dump();
    named.push_back(fn->name);
  }
  ASSERT_GE(named.size(), 3u) << c.dump(2);
  EXPECT_EQ(named[0], "crash_store");
  EXPECT_EQ(named[1], "crash_middle");
  EXPECT_EQ(named[2], "cuFixCrash");
  EXPECT_EQ(c["frames"][0]["module"], "libcuda.so.1");
  EXPECT_EQ(c["function"], "crash_store");
  EXPECT_EQ(c["signature"], "SIGSEGV in crash_store");
  EXPECT_EQ(c["api"], "cuFixCrash");
  // No function events: the list is unknown, not empty.
  EXPECT_TRUE(c["functions_since_last_device_call"].is_null());
  ASSERT_TRUE(c["last_device_call"].is_object()) << c.dump(2);
  EXPECT_NE(c["last_device_call"]["call"].get<std::string>().find("NV_ESC_RM_CONTROL"),
            std::string::npos)
      << c["last_device_call"].dump();
}

struct Traced {
  RunResult run;
  json summary;  // cudatool.trace/1 (stderr)
  std::string trace;
};

Traced trace_crash(const std::string& mode, const std::string& variant, const std::string& dir,
                   const std::string& name) {
  Traced t;
  t.trace = temp_dir() + "/" + name + ".jsonl";
  t.run = run({cudatool_bin(), "trace", "--mode", mode, "--json", "-o", t.trace, "--devices",
               dir + "/*", "--", "setarch", "-R", crash_client(), crash_lib(), dir + "/nvidiactl",
               variant});
  size_t brace = t.run.err.find("{\n");
  if (brace != std::string::npos) {
    t.summary = json::parse(t.run.err.substr(brace), nullptr, false);
  }
  return t;
}

class CrashTrace : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CrashTrace, TheReportNamesTheFunctionThatFaulted) {
  auto [mode, variant] = GetParam();
  std::string name = "crash-" + mode + "-" + variant;
  std::string dir = make_fake_devices(name);
  Traced t = trace_crash(mode, variant, dir, name);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(t.run.status, 128 + 11) << t.run.err;
  ASSERT_TRUE(t.summary.is_object()) << t.run.err;
  EXPECT_TRUE(t.summary["crash_note"].is_null()) << t.summary["crash_note"];
  expect_fixture_crash(t.summary["crash"], variant == "handler");
  if (variant == "handler") {
    EXPECT_NE(t.run.err.find("crash_client: handler ran"), std::string::npos) << t.run.err;
  }
  // The trailer keeps what tells this crash from another.
  StackTrace tr = load_stack_trace(t.trace);
  const json& tc = tr.trailer["crash"];
  EXPECT_EQ(tc["signal"], 11) << tr.trailer.dump();
  EXPECT_EQ(tc["function"], "crash_store");
  EXPECT_EQ(tc["api"], "cuFixCrash");
  EXPECT_EQ(tc["tid"], t.summary["crash"]["tid"]);
  // The last device call is the one the trace holds last for the faulting thread.
  uint64_t last = 0;
  for (const json& e : tr.events) {
    if (e.value("tid", 0) == tc["tid"].get<int>() && e.value("sys", "") == "ioctl") {
      last = e["seq"].get<uint64_t>();
    }
  }
  EXPECT_EQ(t.summary["crash"]["last_device_call"]["seq"], last);
}

INSTANTIATE_TEST_SUITE_P(Modes, CrashTrace,
                         ::testing::Combine(::testing::Values("ptrace", "preload"),
                                            ::testing::Values("plain", "handler")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

TEST(CrashReplay, TheReportNamesTheFunctionAndTheLastAnsweredCall) {
  std::string dir = make_fake_devices("crash-rp");
  Traced t = trace_crash("preload", "plain", dir, "crash-rp");
  ASSERT_EQ(t.run.status, 128 + 11) << t.run.err;
  for (const char* variant : {"plain", "handler"}) {
    SCOPED_TRACE(variant);
    ReplayRun r = replay(
        t.trace, {}, {"setarch", "-R", crash_client(), crash_lib(), dir + "/nvidiactl", variant});
    ASSERT_TRUE(r.report.is_object()) << r.run.err;
    EXPECT_EQ(r.report["end"], "signal");
    EXPECT_EQ(r.report["exit_status"], -11);
    expect_fixture_crash(r.report["crash"], std::string(variant) == "handler");
    EXPECT_NE(r.report["crash"]["last_device_call"]["call"].get<std::string>().find(
                  "answered as recorded seq"),
              std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(CrashReplay, TextReportSaysWhere) {
  std::string dir = make_fake_devices("crash-rp-text");
  Traced t = trace_crash("preload", "plain", dir, "crash-rp-text");
  ASSERT_EQ(t.run.status, 128 + 11) << t.run.err;
  RunResult r = run({cudatool_bin(), "replay", t.trace, "--", "setarch", "-R", crash_client(),
                     crash_lib(), dir + "/nvidiactl", "plain"});
  std::filesystem::remove_all(dir);
  EXPECT_NE(r.err.find("the program was killed by signal 11 (SIGSEGV)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("crash: SIGSEGV (SEGV_MAPERR) at address 0x0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" in crash_store+0x"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("API call in progress: cuFixCrash"), std::string::npos) << r.err;
}

// Where ptrace is refused (here: cudatool itself runs under strace, which traces the command
// first), the replay runs untraced, reports the signal as before and says why there is no
// crash report.
TEST(CrashReplay, PtraceRefusedFallsBackAndSaysWhy) {
  std::string dir = make_fake_devices("crash-rp-refused");
  Traced t = trace_crash("preload", "plain", dir, "crash-rp-refused");
  ASSERT_EQ(t.run.status, 128 + 11) << t.run.err;
  std::string report = temp_dir() + "/crash-refused-report.json";
  RunResult r =
      run({"strace", "-f", "-qq", "-o", "/dev/null", cudatool_bin(), "replay", t.trace, "--json",
           "--report", report, "--", crash_client(), crash_lib(), dir + "/nvidiactl", "plain"});
  std::filesystem::remove_all(dir);
  json j = json::parse(read_file(report), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.err;
  EXPECT_EQ(j["end"], "signal");
  EXPECT_EQ(j["exit_status"], -11);
  EXPECT_TRUE(j["crash"].is_null());
  ASSERT_TRUE(j["crash_note"].is_string());
  EXPECT_NE(j["crash_note"].get<std::string>().find("PTRACE_SEIZE"), std::string::npos);
}

// The real libcuda 580: the first 4 bytes of the answer to
// NV0000_CTRL_CMD_SYNC_GPU_BOOST_GROUP_INFO (trace_a's seq 20, a count) set to 0x7fffffff make
// cuInit die of SIGSEGV.
class CrashReal : public ::testing::Test {
 protected:
  void SetUp() override {
    build_ = shared_builds().front();
    CUDATOOL_REQUIRE_BUILD(build_);
    trace_ = temp_dir() + "/crash-trace_a.jsonl";
    RunResult r = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", trace_,
                       "--driver-version", build_.version});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  ReplayRun replay_init(const std::vector<std::string>& extra) {
    std::vector<std::string> e = {"--deadline", "5"};
    e.insert(e.end(), extra.begin(), extra.end());
    return replay(trace_, e, {cuda_probe_bin(), build_.lib_path, "init"}, 180);
  }
  static constexpr const char* kInject = "seq=20,member=params+0x0,value=0x7fffffff";
  DriverBuild build_;
  std::string trace_;
};

// With --functions the report also lists what the thread entered after its last device call:
// the crash's function among them, still open (the stack and the function events agree); and
// the API call in progress comes from the events where the stack, through the recorder's return
// trampolines, cannot say.
TEST_F(CrashReal, WithFunctionEventsTheReportListsTheFunctionsEnteredSince) {
  std::string bad = temp_dir() + "/crash-bad-functions.jsonl";
  ReplayRun r = replay_init({"--inject", kInject, "--functions", "-o", bad});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  ASSERT_EQ(r.report["end"], "signal") << r.run.err;
  const json& c = r.report["crash"];
  ASSERT_TRUE(c.is_object()) << r.report["crash_note"];
  EXPECT_EQ(c["api"], "cuInit");
  EXPECT_TRUE(c["last_device_call"].is_object()) << c.dump(1);
  const json& since = c["functions_since_last_device_call"];
  ASSERT_TRUE(since.is_array()) << c.dump(1);
  ASSERT_FALSE(since.empty());
  EXPECT_LE(since.size(), 33u);  // the last 32, after a line of how many came before
  bool open = false;
  for (const json& f : since) open |= f == c["function"].get<std::string>() + " (open)";
  EXPECT_TRUE(open) << c["function"] << " not open among " << since.dump(1);
  // Without function events the list is not known: null, not empty.
  ReplayRun plain = replay_init({"--inject", kInject});
  ASSERT_TRUE(plain.report.is_object()) << plain.run.err;
  EXPECT_TRUE(plain.report["crash"]["functions_since_last_device_call"].is_null());
}

TEST_F(CrashReal, AHugeCountMakesCuInitDieInANamedLibcudaFunction) {
  std::string bad = temp_dir() + "/crash-bad.jsonl";
  ReplayRun r = replay_init({"--inject", kInject, "-o", bad});
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  ASSERT_EQ(r.report["end"], "signal") << r.run.err;
  const json& c = r.report["crash"];
  ASSERT_TRUE(c.is_object()) << r.report["crash_note"];
  EXPECT_EQ(c["signal_name"], "SIGSEGV");
  EXPECT_EQ(c["api"], "cuInit");
  const json& f0 = c["frames"][0];
  EXPECT_EQ(f0["module"].get<std::string>().rfind("libcuda.so", 0), 0u) << f0.dump();
  ASSERT_TRUE(f0["function"].is_string()) << f0.dump();
  EXPECT_EQ(c["function"], f0["function"]);
  // The name is cudatool's for the function at that address: `cudatool addr` says the same.
  RunResult a =
      run({cudatool_bin(), "addr", build_.lib_path, f0["offset"].get<std::string>(), "--json"});
  EXPECT_NE(a.out.find(f0["function"].get<std::string>()), std::string::npos) << a.out << a.err;
  // readelf (an independent reader of .eh_frame) has an FDE that starts where the function's
  // name says and holds the pc.
  std::string fn = f0["function"];
  ASSERT_EQ(fn.rfind("fn_", 0), 0u) << fn;
  uint64_t start = std::stoull(fn.substr(3), nullptr, 16), pc = json_hex(f0["offset"]);
  RunResult d = run({"readelf", "--debug-dump=frames", build_.lib_path});
  char want[40];
  snprintf(want, sizeof want, "pc=%016llx..", static_cast<unsigned long long>(start));
  size_t at = d.out.find(want);
  ASSERT_NE(at, std::string::npos) << "readelf has no FDE at " << want;
  uint64_t end = std::stoull(d.out.substr(at + strlen(want), 16), nullptr, 16);
  EXPECT_GE(pc, start);
  EXPECT_LT(pc, end);
  // The replayed trace's trailer keeps the crash, for bisect.
  StackTrace tr = load_stack_trace(bad);
  EXPECT_EQ(tr.trailer["crash"]["function"], c["function"]) << tr.trailer.dump();
}

TEST_F(CrashReal, BisectTakesTheCrashForTheFailure) {
  std::string bad = temp_dir() + "/crash-bisect-bad.jsonl";
  ReplayRun r = replay_init({"--inject", kInject, "-o", bad});
  ASSERT_TRUE(r.report["crash"].is_object()) << r.run.err;
  std::string fn = r.report["crash"]["function"];
  RunResult b = run({cudatool_bin(), "replay", "--bisect", trace_, bad, "--json", "--deadline", "5",
                     "--", cuda_probe_bin(), build_.lib_path, "init"},
                    600);
  // The report goes to stderr (stdout is the program's).
  json j = json::parse(b.err.substr(std::min(b.err.find('{'), b.err.size())), nullptr, false);
  ASSERT_TRUE(j.is_object()) << b.err;
  EXPECT_EQ(j["criterion"], "killed by SIGSEGV in " + fn + " (BAD's trailer)");
  EXPECT_EQ(j["bad_crash"]["function"], fn);
  ASSERT_EQ(j["culprit"].size(), 1u) << b.err;
  EXPECT_EQ(j["diffs"][j["culprit"][0].get<size_t>()]["good_seq"], 20) << b.err;
  bool failed_try = false;
  for (const json& t : j["tries"]) {
    if (t["failed"] == true) {
      EXPECT_EQ(t["crash"], "SIGSEGV in " + fn);
      failed_try = true;
    }
  }
  EXPECT_TRUE(failed_try);
}

}  // namespace
}  // namespace cudatool::test
