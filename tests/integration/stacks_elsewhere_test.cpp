// Traces read where they were not recorded (docs/decode.md, "Call stacks"): a module file that is
// gone, or another build at its path, leaves its frames as module+offset and says why; --lib-path
// finds the recorded build by its build id under any name. And --no-stacks records none.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "harness.hpp"
#include "stacks_support.hpp"
#include "trace_check.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A recording (preload mode: the quicker one) made with a copy of the library in a directory of
// its own, which the tests then take away or replace.
struct Moved {
  std::string dir, lib, trace;
  std::map<uint64_t, size_t> pairs;
  ClientOutput printed;
};

Moved record_with_copy(const std::string& name) {
  Moved m;
  m.dir = temp_dir() + "/" + name;
  fs::create_directories(m.dir);
  m.lib = m.dir + "/libstackfix.so";
  fs::copy_file(stack_fixture().lib, m.lib, fs::copy_options::overwrite_existing);
  std::string dev = make_fake_devices(name + "-dev");
  m.trace = temp_dir() + "/" + name + ".jsonl";
  m.printed = parse_client_output(record_client("preload", m.lib, dev, m.trace));
  std::vector<std::string> problems;
  m.pairs = pair_device_calls(m.printed, load_stack_trace(m.trace), problems);
  EXPECT_TRUE(problems.empty());
  return m;
}

const json* library(const DecodedStacks& d, const std::string& path) {
  for (const json& l : d.summary["libraries"]) {
    if (l["path"] == path) return &l;
  }
  return nullptr;
}

// The library's frames of the first fixCtxCreate call.
std::vector<json> lib_frames(const DecodedStacks& d, const Moved& m) {
  for (const auto& [seq, idx] : m.pairs) {
    if (m.printed.device_calls[idx]["api"] != "fixCtxCreate") continue;
    std::vector<json> out;
    for (const json& f : d.events.at(seq)["stack"]) {
      if (f["module"] == m.lib) out.push_back(f);
    }
    return out;
  }
  return {};
}

TEST(StacksElsewhere, AbsentFileGivesModuleOffsetAndSaysWhy) {
  Moved m = record_with_copy("elsewhere-absent");
  DecodedStacks before = decode_stacks(m.trace);
  ASSERT_EQ(before.status, 0) << before.err;
  auto named = lib_frames(before, m);
  ASSERT_FALSE(named.empty());
  fs::remove(m.lib);
  DecodedStacks d = decode_stacks(m.trace);
  ASSERT_EQ(d.status, 0) << d.err;
  const json* l = library(d, m.lib);
  ASSERT_NE(l, nullptr) << d.summary.dump();
  EXPECT_EQ((*l)["names"], false);
  EXPECT_NE((*l)["why"].get<std::string>().find("cannot be read"), std::string::npos)
      << (*l)["why"];
  auto frames = lib_frames(d, m);
  ASSERT_EQ(frames.size(), named.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i]["offset"], named[i]["offset"]);  // module+offset stays
    EXPECT_TRUE(frames[i]["function"].is_null());
  }
  // No names, so no API call either: the text says why instead of guessing.
  RunResult t = run({cudatool_bin(), "decode", m.trace, "--api-lib", "libstackfix*"}, 60);
  EXPECT_NE(t.out.find("# no names for " + m.lib), std::string::npos) << t.out.substr(0, 2000);
  EXPECT_EQ(t.out.find(" during fixCtxCreate"), std::string::npos);

  // --lib-path: the recorded build under another name is found by its build id.
  std::string other_dir = temp_dir() + "/elsewhere-libs";
  fs::create_directories(other_dir);
  fs::copy_file(stack_fixture().lib, other_dir + "/renamed-copy.so",
                fs::copy_options::overwrite_existing);
  DecodedStacks found = decode_stacks(m.trace, {"--lib-path", other_dir});
  ASSERT_EQ(found.status, 0) << found.err;
  const json* fl = library(found, m.lib);
  ASSERT_NE(fl, nullptr);
  EXPECT_EQ((*fl)["names"], true);
  EXPECT_EQ((*fl)["file"], other_dir + "/renamed-copy.so");
  auto again = lib_frames(found, m);
  ASSERT_EQ(again.size(), named.size());
  for (size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i]["function"], named[i]["function"]);
}

TEST(StacksElsewhere, AnotherBuildAtThePathIsNotTrusted) {
  Moved m = record_with_copy("elsewhere-other");
  fs::copy_file(stack_fixture().other, m.lib, fs::copy_options::overwrite_existing);
  ASSERT_NE(readelf_build_id(m.lib), readelf_build_id(stack_fixture().lib));
  DecodedStacks d = decode_stacks(m.trace);
  ASSERT_EQ(d.status, 0) << d.err;
  const json* l = library(d, m.lib);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ((*l)["names"], false);
  std::string why = (*l)["why"];
  EXPECT_NE(why.find("build id"), std::string::npos) << why;
  EXPECT_NE(why.find(readelf_build_id(stack_fixture().lib).substr(0, 12)), std::string::npos)
      << why;
  for (const json& f : lib_frames(d, m)) EXPECT_TRUE(f["function"].is_null());
}

class NoStacks : public ::testing::TestWithParam<std::string> {};

TEST_P(NoStacks, RecordsNoStacksAndNoModules) {
  std::string dev = make_fake_devices("nostacks-" + GetParam());
  std::string trace = temp_dir() + "/nostacks-" + GetParam() + ".jsonl";
  ClientOutput printed = parse_client_output(
      record_client(GetParam(), stack_fixture().lib, dev, trace, {"--no-stacks"}));
  StackTrace t = load_stack_trace(trace);
  EXPECT_EQ(t.header.value("stacks", false), false);
  EXPECT_TRUE(t.modules.empty());
  size_t ioctls = 0;
  for (const json& e : t.events) {
    EXPECT_FALSE(e.contains("stack")) << e.dump();
    EXPECT_FALSE(e.contains("stack_error"));
    ioctls += e["sys"] == "ioctl";
  }
  EXPECT_EQ(ioctls, printed.device_calls.size());  // the same calls, only without stacks
  RunResult s = run({cudatool_bin(), "stats", trace, "--json"}, 60);
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_TRUE(json::parse(s.out)["api_calls"].is_null());
}

INSTANTIATE_TEST_SUITE_P(Modes, NoStacks, ::testing::Values("ptrace", "preload"));

}  // namespace
}  // namespace cudatool::test
