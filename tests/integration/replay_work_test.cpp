// Issue 37's acceptance: work.c itself (../shared/data/workload, the program the H200 capture
// recorded), built against the CUDA toolkit's headers and linked against the real libcuda
// 580.159.04, replayed from that recording (trace_a, imported). Its launch of add1 is completed
// without being executed, so the program ends by itself (no poll the recording lacks), the
// launch is reported (add1, grid 1024x1x1, block 256x1x1, the device pointer and 262144), and
// `ab RECORDED REPLAYED` finds no early end, no extra call and no status difference. Without the
// library or the CUDA headers: SKIPPED, and why. (How long it takes is measured in
// bench/replay_speed.py, docs/PERFORMANCE.md: no test asserts a time.)
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "harness.hpp"
#include "replay_support.hpp"
#include "tables_oracle.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// work.c: the shared data directory's copy, else the one the captures' README ships with.
std::string work_source() {
  std::string dir = shared_data_dir("workload/work.c");
  if (!dir.empty()) return dir + "/workload/work.c";
  return captures_dir() + "/workload/work.c";
}

class ReplayWork : public ::testing::Test {
 protected:
  void SetUp() override {
    build_ = shared_builds().front();
    CUDATOOL_REQUIRE_BUILD(build_);
    const CudaToolkit& tk = cuda_toolkit();
    if (!tk.ok()) GTEST_SKIP() << "SKIPPED: work.c needs the CUDA headers: " << tk.error;
    // work.c links against libcuda.so.1 (the library's SONAME): a link to the unpacked build, in
    // the program's own directory (rpath $ORIGIN); kern.cubin beside it, opened by work.c by
    // that relative name, as on the H200.
    dir_ = temp_dir() + "/replay-work";
    std::filesystem::create_directories(dir_);
    std::filesystem::remove(dir_ + "/libcuda.so.1");
    std::filesystem::create_symlink(build_.lib_path, dir_ + "/libcuda.so.1");
    std::filesystem::copy_file(fixtures_dir() + "/kern_sm90.cubin", dir_ + "/kern.cubin",
                               std::filesystem::copy_options::overwrite_existing);
    RunResult cc = run({"cc", "-O1", "-o", dir_ + "/work", work_source(), "-I", tk.include_dir,
                        dir_ + "/libcuda.so.1", "-Wl,-rpath,$ORIGIN"});
    ASSERT_EQ(cc.status, 0) << cc.err;
    trace_ = temp_dir() + "/replay-work-trace_a.jsonl";
    if (read_file(trace_).empty()) {
      RunResult r = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o",
                         trace_, "--driver-version", build_.version});
      ASSERT_EQ(r.status, 0) << r.err;
    }
  }
  DriverBuild build_;
  std::string dir_, trace_;
};

TEST_F(ReplayWork, TheLaunchIsCompletedReportedAndAnsweredToTheEnd) {
  std::set<std::string> nodes = host_nvidia_nodes();
  std::string replayed = temp_dir() + "/replay-work-replayed.jsonl";
  ReplayRun r = replay(trace_, {"-o", replayed, "--deadline", "10"},
                       {"sh", "-c", "cd '" + dir_ + "' && exec ./work"}, 180);
  EXPECT_EQ(host_nvidia_nodes(), nodes) << "device nodes appeared on the host";
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  // It ends by itself: every element comes back as it was sent (no kernel ran), so work.c says
  // "bad 262144" and exits 1.
  EXPECT_EQ(r.report["end"], "exit") << r.report.dump(1);
  EXPECT_EQ(r.report["exit_status"], 1);
  EXPECT_NE(r.run.out.find("bad 262144"), std::string::npos) << r.run.out;
  const json& gpu = r.report["fake_gpu"];
  EXPECT_TRUE(gpu["unfinished"].empty()) << gpu.dump(1);
  EXPECT_EQ(gpu["executed"], false);
  ASSERT_EQ(gpu["launches"].size(), 1u) << gpu.dump(1);
  const json& l = gpu["launches"][0];
  EXPECT_EQ(l["kernel"], "add1") << l.dump(1);
  EXPECT_NE(l["image"].get<std::string>().find("kern.cubin"), std::string::npos) << l.dump(1);
  EXPECT_EQ(l["grid"], json::array({1024, 1, 1}));
  EXPECT_EQ(l["block"], json::array({256, 1, 1}));
  ASSERT_EQ(l["params"].size(), 2u) << l.dump(1);
  EXPECT_NE(l["params"][0]["value"], 0) << l.dump(1);  // the device pointer
  EXPECT_EQ(l["params"][1]["value"], 262144) << l.dump(1);
  // No call the recording does not answer (before, the polls of a waiting cuCtxSynchronize):
  // what is unrecorded is closes and unmaps (a capture records none) and the replay's own dups.
  for (const json& d : deviations(r.report, "unrecorded")) {
    EXPECT_TRUE(d["outcome"] == "unrecorded_succeeded" || d["outcome"] == "unrecorded_carried_out")
        << d.dump();
  }
  EXPECT_TRUE(deviations(r.report, "out_of_order").empty()) << r.report["deviations"].dump(1);
  // The replayed run against the recording: the calls after the launch (copy back, frees,
  // module unload, context release) were made and answered as recorded.
  RunResult ab = run({cudatool_bin(), "ab", "--json", "--all", trace_, replayed});
  json v = json::parse(ab.out, nullptr, false);
  ASSERT_TRUE(v.is_object()) << ab.err;
  EXPECT_TRUE(v["verdict"].is_null() || v["verdict"]["ended_early"].is_null()) << ab.out;
  EXPECT_EQ(v["counts"]["extra_call"], 0) << ab.out;
  EXPECT_EQ(v["counts"]["different_status"], 0) << ab.out;
  EXPECT_EQ(v["counts"]["different_return"], 0) << ab.out;
  // decode reads the replayed trace's launch record as the report gave it (not "unknown").
  RunResult dec = run({cudatool_bin(), "decode", "--json", replayed});
  ASSERT_EQ(dec.status, 0) << dec.err;
  std::vector<json> lines;
  for (const json& j : json_lines(dec.out)) {
    if (j.value("call", "") == "launch") lines.push_back(j);
  }
  ASSERT_EQ(lines.size(), 1u) << dec.out;
  EXPECT_EQ(lines[0]["known"], true);
  std::map<std::string, std::string> args;
  for (const json& a : lines[0]["args"]) args[a["name"]] = a["value"];
  EXPECT_EQ(args["kernel"], l["kernel"]);
  EXPECT_EQ(json::parse(args["grid"]), l["grid"]);
  EXPECT_EQ(json::parse(args["block"]), l["block"]);
}

}  // namespace
}  // namespace cudatool::test
