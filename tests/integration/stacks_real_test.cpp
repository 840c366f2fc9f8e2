// Frames in the real libcuda 580.159.04 (the shared data directory, unpacked into the build
// tree; SKIPPED without it): a trace whose module record maps that library, made here with the
// addresses readelf gives for three of its exports, decodes to those exports' names and to the
// CUDA API call in progress (the outermost libcuda export on the stack) — the function map of
// the real library, not of a fixture, names the frames.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <regex>
#include <sstream>

#include "harness.hpp"
#include "stacks_support.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// Export name -> st_value, from readelf --dyn-syms (an independent reader of the same file).
std::map<std::string, uint64_t> readelf_exports(const std::string& lib) {
  RunResult r = run({"readelf", "--dyn-syms", "-W", lib}, 120);
  std::map<std::string, uint64_t> out;
  std::istringstream in(r.out);
  std::regex row(R"(^\s*\d+:\s+([0-9a-f]+)\s+\d+\s+FUNC\s+GLOBAL\s+DEFAULT\s+\d+\s+(\S+)$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) out[m[2]] = std::stoull(m[1], nullptr, 16);
  }
  return out;
}

std::string readelf_build_id(const std::string& lib) {
  RunResult r = run({"readelf", "-n", lib}, 60);
  std::smatch m;
  std::regex id(R"(Build ID: ([0-9a-f]+))");
  return std::regex_search(r.out, m, id) ? std::string(m[1]) : std::string();
}

TEST(StacksReal, LibcudaFramesAreNamedAndTheApiCallFound) {
  DriverBuild b = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(b);
  auto exports = readelf_exports(b.lib_path);
  std::string build_id = readelf_build_id(b.lib_path);
  ASSERT_FALSE(build_id.empty());
  for (const char* n : {"cuInit", "cuDevicePrimaryCtxRetain", "cuGetProcAddress_v2"}) {
    ASSERT_TRUE(exports.count(n)) << n;
  }
  const uint64_t base = 0x7f3a00000000;
  auto at = [&](const char* n) { return fmt::format("\"{:#x}\"", base + exports[n] + 0x20); };
  std::string t;
  t += R"({"cudatool_trace":3,"argv":["work"],"mode":"preload","driver_version":")" + b.version +
       R"(","devices":"/dev/nvidia*","stacks":true})"
       "\n";
  t += fmt::format(
      R"({{"module":{{"pid":100,"path":"{}","build_id":"{}","base":"{:#x}","lo":"{:#x}","hi":"{:#x}"}}}})"
      "\n",
      b.lib_path, build_id, base, base, base + 0x5c00000);
  auto ioctl = [&](int seq, const std::string& stack) {
    return fmt::format(
        R"({{"seq":{},"t":{},"pid":100,"tid":100,"sys":"ioctl","fd":3,"path":"/dev/nvidiactl","req":"0xc020462a","ret":0,"arg":{{"role":"arg","addr":"0x7ffd0000","size":32,"pre":"{}","post":"{}"}},"stack":[{}]}})"
        "\n",
        seq, 1000 * (seq + 1), std::string(64, '0'), std::string(64, '0'), stack);
  };
  // An inner export called under cuDevicePrimaryCtxRetain (outermost), then the program.
  t += ioctl(
      0, at("cuGetProcAddress_v2") + "," + at("cuDevicePrimaryCtxRetain") + ",\"0x55d0c2a01234\"");
  t += ioctl(1, at("cuInit") + ",\"0x55d0c2a01299\"");
  t += R"({"end":{"reason":"exit","exit_status":0,"events":2}})"
       "\n";
  std::string path = write_temp("stacks-real.jsonl", t);
  RunResult r = run({cudatool_bin(), "decode", path, "--json", "--stacks"}, 300);
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<uint64_t, json> ev;
  for (std::istringstream in(r.out); !in.eof();) {
    std::string line;
    std::getline(in, line);
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("seq")) ev[j["seq"].get<uint64_t>()] = j;
  }
  ASSERT_EQ(ev.size(), 2u) << r.out.substr(0, 2000);
  const json& s0 = ev[0]["stack"];
  ASSERT_GE(s0.size(), 2u) << ev[0].dump();
  EXPECT_EQ(s0[0]["module"], b.lib_path);
  EXPECT_EQ(s0[0]["function"], "cuGetProcAddress_v2") << s0[0].dump();
  EXPECT_EQ(s0[0]["function_offset"], "0x20");
  EXPECT_EQ(s0[1]["function"], "cuDevicePrimaryCtxRetain") << s0[1].dump();
  EXPECT_EQ(ev[0]["api"], "cuDevicePrimaryCtxRetain");
  EXPECT_EQ(ev[1]["api"], "cuInit");
  // The text says the same.
  RunResult text = run({cudatool_bin(), "decode", path}, 300);
  EXPECT_NE(text.out.find("cuDevicePrimaryCtxRetain"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace cudatool::test
