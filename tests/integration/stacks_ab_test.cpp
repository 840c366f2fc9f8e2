// `ab` names the CUDA API call in progress at a divergence ("during fixCtxCreate"), from the call
// stacks and module records of the traces (cmd_ab.cpp → ab::NormalizeOptions::reader_api_namer →
// trace::make_api_namer). A recording of tests/fixtures/stacks is run A; B is the same file
// without the line of one device call that the library itself said it made under fixCtxCreate.
// The API name ab prints must be the one the program printed for that call; with an --api-lib
// that matches no module, ab names none.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "harness.hpp"
#include "stacks_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class StacksAb : public ::testing::TestWithParam<std::string> {};

TEST_P(StacksAb, VerdictNamesTheApiCallOfTheDivergence) {
  const std::string mode = GetParam();
  const std::string lib = stack_fixture().lib;
  std::string dev = make_fake_devices("stacks-ab-" + mode);
  std::string a = temp_dir() + "/stacks-ab-" + mode + "-a.jsonl";
  std::string b = temp_dir() + "/stacks-ab-" + mode + "-b.jsonl";
  ClientOutput printed = parse_client_output(record_client(mode, lib, dev, a));
  StackTrace t = load_stack_trace(a);
  std::vector<std::string> problems;
  std::map<uint64_t, size_t> pairs = pair_device_calls(printed, t, problems);
  for (const auto& p : problems) ADD_FAILURE() << p;

  // The first device call of the main process that the library made under fixCtxCreate.
  ASSERT_FALSE(t.events.empty());
  uint64_t drop_line = 0;
  const int main_pid = t.events.front()["pid"].get<int>();  // its first event: the exec
  for (const json& e : t.events) {
    auto it = pairs.find(e["seq"].get<uint64_t>());
    if (it == pairs.end() || e["pid"].get<int>() != main_pid) continue;
    if (printed.device_calls[it->second]["api"] == "fixCtxCreate") {
      drop_line = e["_line"].get<uint64_t>();
      break;
    }
  }
  ASSERT_NE(drop_line, 0u) << "the program made no device call under fixCtxCreate";
  {
    std::istringstream in(read_file(a));
    std::ofstream out(b);
    std::string line;
    for (uint64_t n = 1; std::getline(in, line); ++n) {
      if (n != drop_line) out << line << '\n';
    }
  }

  RunResult same = run({cudatool_bin(), "ab", a, a, "--api-lib", "libstackfix*"});
  EXPECT_EQ(same.status, 0) << same.out << same.err;

  RunResult r = run({cudatool_bin(), "ab", a, b, "--api-lib", "libstackfix*"});
  ASSERT_EQ(r.status, 1) << r.out << r.err;
  // A's side of the verdict is the call B lacks: made under fixCtxCreate.
  bool named = r.out.find("\n  during fixCtxCreate\n") != std::string::npos ||
               r.out.find("\n  A: during fixCtxCreate;") != std::string::npos;
  EXPECT_TRUE(named) << r.out;

  RunResult j = run({cudatool_bin(), "ab", a, b, "--json", "--api-lib", "libstackfix*"});
  ASSERT_EQ(j.status, 1) << j.err;
  json v = json::parse(j.out);
  EXPECT_EQ(v["verdict"]["a"]["api"], "fixCtxCreate") << v["verdict"].dump();

  // No module is the API library: no event is named, and the verdict says nothing of one.
  RunResult none = run({cudatool_bin(), "ab", a, b, "--api-lib", "libnomatch*"});
  ASSERT_EQ(none.status, 1) << none.err;
  EXPECT_EQ(none.out.find("during "), std::string::npos) << none.out;
}

INSTANTIATE_TEST_SUITE_P(Modes, StacksAb, ::testing::Values("ptrace", "preload"));

}  // namespace
}  // namespace cudatool::test
