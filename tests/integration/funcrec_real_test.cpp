// The function recorder on the real libcuda 580.159.04 (shared data; SKIPPED without it), under
// `cudatool replay` of the H200 capture from cuInit to the primary context, with every function
// the patch plan can patch: the program does what it does unrecorded (the recorder changed
// nothing it sees), and each driver-API call cuda_probe printed is a recorded outermost call of
// that export, returning what the program printed — the program itself is the oracle.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/driver_image.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "harness.hpp"
#include "record/function_recorder.hpp"
#include "replay_support.hpp"
#include "trace/function_calls.hpp"

namespace cudatool::test {
namespace {

using trace::FunctionCall;

// The replay shim starts the recorder from the environment FunctionRecorder gives (no preload of
// its own: the replay shim carries the recorder).
TEST(FuncrecReal, ApiCallsOfAReplayedPrimaryContextReturnWhatTheProgramSaw) {
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string dir = temp_dir() + "/funcrec-real";
  std::filesystem::create_directories(dir);
  std::string trace = dir + "/trace_a.jsonl";
  RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", trace,
                       "--driver-version", build.version});
  ASSERT_EQ(imp.status, 0) << imp.err;
  auto img = DriverImage::open(build.lib_path);
  ASSERT_TRUE(static_cast<bool>(img));
  FunctionMap& map = (*img)->facet<FunctionMap>();
  add_driver_table_names(**img, map);
  record::FunctionRecorderOptions opt;
  opt.libraries = record::function_libraries_for({"cuda_probe", build.lib_path, "ctx"});
  ASSERT_FALSE(opt.libraries.empty());
  EXPECT_EQ(opt.libraries.front(), build.lib_path);
  opt.dir = dir;
  opt.spool_chunks = 1024;
  record::FunctionRecorder fr = record::FunctionRecorder::prepare(opt);
  ASSERT_TRUE(fr.active()) << fr.why_not();
  auto env = fr.env();
  ASSERT_EQ(env.size(), 2u);
  ReplayRun r =
      replay(trace, {"--deadline", "60"},
             {"sh", "-c",
              env[0].first + "=" + env[0].second + " " + env[1].first + "=" + env[1].second +
                  " exec " + cuda_probe_bin() + " " + build.lib_path + " ctx"},
             600);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_EQ(r.run.err.find("function recorder"), std::string::npos) << r.run.err;
  std::vector<std::pair<std::string, int>> printed;
  for (const auto& j : json_lines(r.run.out))
    if (j.contains("call")) printed.emplace_back(j["call"], j.value("ret", -1));
  ASSERT_GE(printed.size(), 11u) << r.run.out;
  EXPECT_EQ(printed.back(), std::make_pair(std::string("cuCtxSetCurrent"), 0));

  record::FunctionRecorder::Result rec = fr.finish(0);
  EXPECT_TRUE(rec.problems.empty()) << rec.problems.front();
  ASSERT_EQ(rec.tables.size(), 1u);
  EXPECT_EQ(rec.tables[0].starts.size(), fr.plan().sites.size());
  EXPECT_EQ(rec.tables[0].skipped, 0u);
  EXPECT_EQ(rec.tables[0].not_patchable, fr.plan().refusals.size());
  auto threads = trace::build_function_calls(rec.tables, rec.blocks);
  ASSERT_FALSE(threads.empty());
  // The program's thread: the one whose calls include cuInit at the outermost level.
  const trace::ThreadCalls* main = nullptr;
  for (const auto& t : threads) {
    if (main == nullptr || t.calls.size() > main->calls.size()) main = &t;
  }
  EXPECT_TRUE(main->notes.empty()) << main->notes.front();
  EXPECT_EQ(main->lost, 0u);
  EXPECT_GT(main->calls.size(), 100000u);
  auto name = [&](const FunctionCall& c) {
    const Function* f = map.at(rec.tables[0].starts.at(c.function));
    return f == nullptr ? std::string("?") : map.display_name(*f);
  };
  // The outermost calls, in order: each printed API call is one of them, in the same order,
  // returning (in eax: CUresult is an int) what the program printed.
  size_t next = 0;
  for (const auto& c : main->calls) {
    if (c.parent >= 0 || next == printed.size() || name(c) != printed[next].first) continue;
    EXPECT_EQ(c.end, FunctionCall::End::kReturned) << printed[next].first;
    EXPECT_EQ(static_cast<int32_t>(c.ret), printed[next].second) << printed[next].first;
    ++next;
  }
  EXPECT_EQ(next, printed.size()) << "printed API call " << next << " not found as a recorded "
                                  << "outermost call";
}

}  // namespace
}  // namespace cudatool::test
