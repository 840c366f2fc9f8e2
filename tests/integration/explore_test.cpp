// `cudatool explore` (docs/explore.md): on nv_lib's explore mode (tests/fixtures/replay/nv_lib.c:
// one control's answer needed, one optional, one count member trusted), recorded here on fake
// device nodes; on the real libcuda 580.159.04 answered from trace_a (SKIPPED without it); and
// bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "harness.hpp"
#include "replay_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

struct Explored {
  RunResult run;
  json report;  // cudatool.explore/1
};

Explored explore(const std::string& trace, const std::vector<std::string>& extra,
                 const std::vector<std::string>& command, int timeout_s = 300) {
  std::vector<std::string> argv{cudatool_bin(), "explore", trace, "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  Explored e;
  e.run = run(argv, timeout_s);
  e.report = json::parse(e.run.out, nullptr, false);
  return e;
}

// The experiments of a report on one request (its decoded name ends with `request`).
std::vector<json> on(const json& report, const std::string& strategy, const std::string& request) {
  std::vector<json> out;
  for (const json& e : report["experiments"]) {
    std::string r = e["request"];
    if (e["strategy"] == strategy && r.size() >= request.size() &&
        r.compare(r.size() - request.size(), request.size(), request) == 0) {
      out.push_back(e);
    }
  }
  return out;
}

std::vector<std::string> lib_cmd(const std::string& dir) {
  return {fixtures_dir() + "/nv_lib_main", fixtures_dir() + "/libnv_fixture.so", dir, "explore"};
}

// nv_lib explore recorded on fake nodes (deleted afterwards: the replays need none of them).
struct Recorded {
  std::string dir, trace;
};
Recorded record_explore_fixture() {
  Recorded r;
  r.dir = make_fake_devices("explore-fixture");
  r.trace = temp_dir() + "/explore-fixture.jsonl";
  std::vector<std::string> argv{cudatool_bin(), "trace", "--mode",    "preload",    "-q",
                                "-o",           r.trace, "--devices", r.dir + "/*", "--"};
  auto cmd = lib_cmd(r.dir);
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  RunResult t = run(argv);
  EXPECT_EQ(t.status, 0) << t.err;
  std::filesystem::remove_all(r.dir);
  return r;
}

// --refuse tells the needed control (fails: nvfGetInfo's result changed, exit 1) from the
// optional one (tolerated); --mutate finds the count that crashes the fixture, with a command
// that reproduces the crash on its own.
TEST(ExploreFixture, FindsTheNeededTheOptionalAndTheCrashingCount) {
  Recorded rec = record_explore_fixture();
  Explored e = explore(rec.trace, {"--refuse", "--mutate", "-j", "2"}, lib_cmd(rec.dir));
  ASSERT_TRUE(e.report.is_object()) << e.run.out << e.run.err;
  EXPECT_EQ(e.report["schema"], "cudatool.explore/1");
  EXPECT_TRUE(e.report["baseline"]["ok"].get<bool>()) << e.report["baseline"].dump();
  EXPECT_EQ(e.run.status, 1) << e.run.err;  // findings

  auto needed = on(e.report, "refuse", "NV2080_CTRL_CMD_GPU_GET_INFO_V2");
  ASSERT_EQ(needed.size(), 1u) << e.report.dump(1);
  EXPECT_EQ(needed[0]["outcome"], "fails") << needed[0].dump(1);
  EXPECT_EQ(needed[0]["exit_status"], 1);
  EXPECT_EQ(needed[0]["api_call"], "nvfGetInfo");
  EXPECT_EQ(needed[0]["baseline_result"], 0);
  EXPECT_EQ(needed[0]["cuda_result"], 0x56);  // NV_ERR_NOT_SUPPORTED, as the fixture prints it

  auto optional = on(e.report, "refuse", "NV2080_CTRL_CMD_GPU_GET_NAME_STRING");
  ASSERT_EQ(optional.size(), 1u);
  EXPECT_EQ(optional[0]["outcome"], "tolerated") << optional[0].dump(1);

  // Every crash is a mutation of FB_GET_INFO_V2's count, and there is one (the largest value).
  std::vector<json> crashes;
  for (const json& x : e.report["experiments"]) {
    if (x["outcome"] == "crashes") crashes.push_back(x);
  }
  ASSERT_FALSE(crashes.empty()) << e.report.dump(1);
  for (const json& c : crashes) {
    EXPECT_EQ(c["strategy"], "mutate");
    EXPECT_EQ(c["member"], "params.fbInfoListSize") << c.dump(1);
    EXPECT_EQ(c["signal"], 11);  // SIGSEGV
    // The crash report names the fixture's function the loop over the count runs in.
    EXPECT_NE(c["function"].get<std::string>().find("nvf_"), std::string::npos) << c.dump(1);
    EXPECT_NE(c["reproduce"].get<std::string>().find("cudatool replay "), std::string::npos);
  }
  // Crashes are listed first.
  EXPECT_EQ(e.report["experiments"][0]["outcome"], "crashes");
  // The reproducing command, run as it is: the fixture dies of the same signal.
  std::string cmd = crashes[0]["reproduce"];
  const std::string head = "cudatool replay";
  ASSERT_EQ(cmd.compare(0, head.size(), head), 0) << cmd;
  cmd.replace(0, head.size(), cudatool_bin() + " replay --program-status");
  RunResult repro = run({"sh", "-c", cmd + " >/dev/null 2>&1; echo $?"});
  EXPECT_EQ(repro.out, "139\n") << cmd;  // 128 + SIGSEGV
}

// Text, the --html page, and a deterministic report order under different -j.
TEST(ExploreFixture, TextAndHtmlAndTheSameOrderWhateverTheJobs) {
  Recorded rec = record_explore_fixture();
  std::string html = temp_dir() + "/explore-fixture.html";
  Explored one = explore(rec.trace, {"-j", "1", "--html", html}, lib_cmd(rec.dir));
  Explored two = explore(rec.trace, {"-j", "3"}, lib_cmd(rec.dir));
  ASSERT_TRUE(one.report.is_object() && two.report.is_object()) << one.run.err << two.run.err;
  std::vector<std::string> a, b;
  // Each entry names its outcome and how the replay ended, so that a difference says which.
  auto entry = [](const json& x) {
    return x["kind"].get<std::string>() + " " + x["outcome"].get<std::string>() + " (" +
           x["end"].dump() + ")";
  };
  for (const json& x : one.report["experiments"]) a.push_back(entry(x));
  for (const json& x : two.report["experiments"]) b.push_back(entry(x));
  EXPECT_EQ(a, b);
  EXPECT_EQ(one.report["jobs"], 1);
  EXPECT_EQ(two.report["jobs"], 3);
  std::string page = read_file(html);
  EXPECT_NE(page.find("<!DOCTYPE html>"), std::string::npos);
  EXPECT_NE(page.find("cudatool.explore/1"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);  // self-contained
  EXPECT_EQ(page.find("https://"), std::string::npos);
  // Progress on stderr, one line per experiment.
  EXPECT_NE(one.run.err.find("[1/"), std::string::npos) << one.run.err;
  RunResult text = run({cudatool_bin(), "explore", rec.trace, "-q", "--", lib_cmd(rec.dir)[0],
                        lib_cmd(rec.dir)[1], rec.dir, "explore"});
  EXPECT_NE(text.out.find("fails:\n  refuse"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("NV2080_CTRL_CMD_GPU_GET_INFO_V2"), std::string::npos);
  EXPECT_NE(text.out.find("nvfGetInfo 86 (baseline 0)"), std::string::npos) << text.out;
  EXPECT_EQ(text.err, "");
}

// trace_a imported as a trace of the build's driver version (once per test binary).
std::string imported_trace_a(const DriverBuild& build) {
  std::string trace = temp_dir() + "/explore-trace_a-" + build.version + ".jsonl";
  if (read_file(trace).empty()) {
    RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o",
                         trace, "--driver-version", build.version});
    EXPECT_EQ(imp.status, 0) << imp.err;
  }
  return trace;
}

// The real libcuda 580.159.04 answered from trace_a (imported), `cuda_probe … ctx`: refused, the
// three controls replay's tests know to be fatal are found fatal with the results the H200 run
// gives for them, and some requests are tolerated. SKIPPED without the library.
TEST(ExploreReal, TheKnownFatalControlsAreFatalAndSomeRequestsAreTolerated) {
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string trace = imported_trace_a(build);
  Explored e = explore(trace, {"--refuse", "-j", "2", "--deadline", "5"},
                       {cuda_probe_bin(), build.lib_path, "ctx"}, 900);
  ASSERT_TRUE(e.report.is_object()) << e.run.err;
  ASSERT_TRUE(e.report["baseline"]["ok"].get<bool>()) << e.report["baseline"].dump();
  struct Fatal {
    std::string control, api;
    int result;
  };
  for (const Fatal& f :
       {Fatal{"NV2080_CTRL_CMD_FB_GET_INFO_V2", "cuInit", 100},
        Fatal{"NV906F_CTRL_GET_CLASS_ENGINEID", "cuDevicePrimaryCtxRetain", 801},
        Fatal{"NVA06C_CTRL_CMD_GPFIFO_SCHEDULE", "cuDevicePrimaryCtxRetain", 801}}) {
    auto x = on(e.report, "refuse", f.control);
    ASSERT_EQ(x.size(), 1u) << f.control;
    // Fatal: the API call fails; libcuda 580 sometimes also dies of SIGSEGV on its way out after
    // a failed context creation (docs/explore.md: a refused FIFO_GET_CHANNELLIST crashed in 3 of
    // 6 reruns), so a crash after the failed call is fatal as well.
    EXPECT_TRUE(x[0]["outcome"] == "fails" || x[0]["outcome"] == "crashes") << x[0].dump(1);
    EXPECT_EQ(x[0]["api_call"], f.api) << x[0].dump(1);
    // The API call that made the request, named without stacks (an imported capture has none):
    // from the exports the second baseline replay recorded around it.
    EXPECT_EQ(x[0]["api"], f.api) << x[0].dump(1);
    if (!x[0]["cuda_result"].is_null() || x[0]["outcome"] == "fails") {
      EXPECT_EQ(x[0]["cuda_result"], f.result) << x[0].dump(1);
    }
    EXPECT_EQ(x[0]["baseline_result"], 0);
  }
  EXPECT_NE(e.report["api_source"].get<std::string>().find("--functions=cu*,!*.*"),
            std::string::npos)
      << e.report["api_source"];
  size_t tolerated = 0, named = 0;
  for (const json& x : e.report["experiments"]) {
    tolerated += x["outcome"] == "tolerated";
    named += x["api"].is_string();
  }
  EXPECT_GT(tolerated, 0u);
  // Requests libcuda makes outside every API call (its threads' polls) have none; most have one.
  EXPECT_GT(named * 2, e.report["experiments"].size()) << named;
  // Every request kind of the recording was refused once.
  EXPECT_EQ(e.report["experiments"].size(), e.report["request_kinds"].get<size_t>());
}

// --mutate on the same, within a small budget (counts and sizes first): libcuda 580 dies of
// SIGSEGV in cuInit when NV0080_CTRL_CMD_GPU_GET_NUM_SUBDEVICES answers a huge numSubDevices
// (found by this command; docs/explore.md). Every crash found reproduces with its command.
TEST(ExploreReal, MutateFindsACrashWithinASmallBudget) {
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string trace = imported_trace_a(build);
  Explored e = explore(trace, {"--mutate", "--max-experiments", "60", "-j", "2"},
                       {cuda_probe_bin(), build.lib_path, "ctx"}, 900);
  ASSERT_TRUE(e.report.is_object()) << e.run.err;
  ASSERT_EQ(e.report["experiments"].size(), 60u);
  std::vector<json> crashes;
  for (const json& x : e.report["experiments"]) {
    EXPECT_EQ(x["strategy"], "mutate");
    if (x["outcome"] == "crashes") crashes.push_back(x);
  }
  ASSERT_FALSE(crashes.empty()) << e.report.dump(1);
  // The crash report names a libcuda function (the library is stripped: fn_<addr> or an export).
  EXPECT_FALSE(crashes[0]["function"].get<std::string>().empty()) << crashes[0].dump(1);
  std::string cmd = crashes[0]["reproduce"];
  cmd.replace(0, std::string("cudatool replay").size(),
              cudatool_bin() + " replay --program-status");
  RunResult repro = run({"sh", "-c", cmd + " >/dev/null 2>&1; echo $?"}, 300);
  EXPECT_EQ(repro.out, std::to_string(128 + crashes[0]["signal"].get<int>()) + "\n") << cmd;
}

// Ctrl-C once the first experiment is done: the running replays end, no more start, and the
// report of what was done is printed, marked interrupted.
TEST(ExploreFixture, CtrlCStopsAndPrintsWhatWasDone) {
  Recorded rec = record_explore_fixture();
  std::string err = temp_dir() + "/explore-ctrl-c.err";
  std::string cmd = cudatool_bin() + " explore " + rec.trace + " --refuse --mutate -j 1 --json -- ";
  for (const std::string& a : lib_cmd(rec.dir)) cmd += a + " ";
  RunResult r = run({"sh", "-c",
                     cmd + "2>" + err + " & pid=$!; until grep -q '^\\[1/' " + err +
                         "; do sleep 0.02; done; kill -INT $pid; wait $pid"});
  json report = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out << read_file(err);
  EXPECT_TRUE(report["interrupted"].get<bool>());
  size_t done = 0, not_run = 0;
  for (const json& x : report["experiments"]) ++(x["outcome"] == "not_run" ? not_run : done);
  EXPECT_GE(done, 1u);
  EXPECT_GE(not_run, 1u);
}

TEST(ExploreBadInput, ANonTraceAnEmptyTraceAndAMissingCommandAreRefused) {
  std::string not_trace = temp_dir() + "/explore-not-a-trace.jsonl";
  std::ofstream(not_trace) << "this is not a trace\n";
  std::string empty = temp_dir() + "/explore-empty.jsonl";
  std::ofstream(empty).flush();
  for (const std::string& t : {not_trace, empty}) {
    RunResult r = run({cudatool_bin(), "explore", t, "--", "true"});
    EXPECT_EQ(r.status, 2) << t << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  }
  Recorded rec = record_explore_fixture();
  RunResult r = run({cudatool_bin(), "explore", rec.trace, "--", "/no/such/command"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("/no/such/command"), std::string::npos) << r.err;
  RunResult none = run({cudatool_bin(), "explore", rec.trace});
  EXPECT_EQ(none.status, 2) << none.err;
  // A baseline that fails: nothing is explored.
  RunResult bad = run({cudatool_bin(), "explore", rec.trace, "--", "false"});
  EXPECT_EQ(bad.status, 2) << bad.err;
  EXPECT_NE(bad.out.find("stopped: the baseline"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace cudatool::test
