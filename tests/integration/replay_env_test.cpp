// `cudatool replay` with a recorded environment (trace format v2's environment events): env_client
// (tests/fixtures/envtrace) recorded in preload mode on its fake tree, the tree deleted, then
// replayed from the trace. What the program reads of the driver's view of the system — file
// contents, directory listings, the missing device node's stat — is what the recording holds,
// from the replay's private tree; nothing of the deleted tree is needed or re-created.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "env_check.hpp"
#include "harness.hpp"
#include "replay_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// The reads and listings env_client printed, by the call's identity (function, path, the
// order of calls with that identity): the bytes or names it got, or how it failed.
std::map<std::string, std::string> what_was_read(const std::vector<json>& printed) {
  std::map<std::string, std::string> m;
  std::map<std::string, int> nth;
  for (const json& e : printed) {
    if (e.value("sys", "") != "file" || e.value("env", true) == false) continue;
    if (!e.contains("content") && !e.contains("entries") && e.value("ret", 0) >= 0) continue;
    std::string key = e.value("op", std::string("?")) + " " + e.value("path", std::string());
    key += " #" + std::to_string(nth[key]++);
    std::string got;
    if (e.contains("content")) got = "content " + e["content"].dump();
    if (e.contains("entries")) got += "entries " + e["entries"].dump();
    if (e.value("ret", 0) < 0) got += "errno " + std::to_string(e.value("errno", 0));
    m[key] = got;
  }
  return m;
}

TEST(ReplayEnv, TheProgramReadsTheRecordedEnvironment) {
  EnvTree tree = make_env_tree("rp-env");
  std::string trace = temp_dir() + "/rp-env.jsonl";
  RunResult rec = run({cudatool_bin(), "trace", "--mode", "preload", "-q", "-o", trace, "--devices",
                       tree.root + "/no-device/*", "--env", tree.env, "--", env_client_bin(),
                       tree.root, "full"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  std::map<std::string, std::string> recorded = what_was_read(load_printed(rec.out));
  ASSERT_GT(recorded.size(), 10u) << rec.out;
  std::filesystem::remove_all(tree.root);

  std::string replayed_trace = temp_dir() + "/rp-env-replayed.jsonl";
  ReplayRun r = replay(trace, {"-o", replayed_trace}, {env_client_bin(), tree.root, "full"}, 120);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  EXPECT_NE(r.report["environment"].get<std::string>().find("recorded"), std::string::npos)
      << r.report["environment"];
  EXPECT_GT(r.report["environment_calls"].get<uint64_t>(), 10u);
  std::map<std::string, std::string> replayed = what_was_read(load_printed(r.run.out));
  for (const auto& [call, got] : recorded) {
    auto it = replayed.find(call);
    if (it == replayed.end()) {
      ADD_FAILURE() << call << ": not made under replay";
    } else if (call.find("/registry") != std::string::npos) {
      // 80 KiB, longer than the recorders' bound: the trace holds its first bytes, and so does
      // the replay's copy.
      EXPECT_LT(it->second.size(), got.size()) << call;
      EXPECT_EQ(got.compare(0, it->second.size() - 1, it->second, 0, it->second.size() - 1), 0)
          << call << ": not a prefix of what was read";
    } else {
      EXPECT_EQ(it->second, got) << call;
    }
  }
  for (const auto& [call, got] : replayed) {
    EXPECT_TRUE(recorded.count(call)) << call << ": made only under replay: " << got.substr(0, 200);
  }
  // The replayed run as a trace against the recording: a replayed run writes no environment
  // events (its header has no env globs), so ab leaves the recording's out, says so, and finds
  // the rest (execs, forks, the exit) equivalent.
  size_t env_events = 0;
  for (const json& e : load_trace(trace).events) env_events += is_env_sys(e["sys"]);
  ASSERT_GT(env_events, 10u);
  RunResult ab = run({cudatool_bin(), "ab", trace, replayed_trace, "--json"});
  EXPECT_EQ(ab.status, 0) << ab.out << ab.err;
  json j = json::parse(ab.out);
  EXPECT_EQ(j["alignment"]["left_out_a"], env_events);
  EXPECT_EQ(j["alignment"]["left_out_b"], 0);
  bool noted = false;
  for (const json& n : j["notes"]) noted |= n["what"] == "environment";
  EXPECT_TRUE(noted) << j["notes"].dump();
  // The replay answered from its private tree: the deleted one was not re-created.
  EXPECT_FALSE(std::filesystem::exists(tree.root + "/proc")) << tree.root;
  EXPECT_FALSE(std::filesystem::exists(tree.root + "/dev/nvidiactl")) << tree.root;
}

}  // namespace
}  // namespace cudatool::test
