// `symbolize --format uftrace`: Debian's uftrace 0.13 (the independent tool) traces every
// function of a stripped library through the .sym files and names each one. On the fixture
// library of tests/fixtures/funcrec, mapped by its full file name, its SONAME and its link name,
// the names are checked against nm of the unstripped copy; on the real libcuda 580 (shared data)
// under `cudatool replay` of the H200 capture, from cuInit to the primary context, no function of
// the report is left as an address. Without uftrace: a failure saying how to install it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "harness.hpp"
#include "replay_support.hpp"
#include "stacks_support.hpp"

namespace cudatool::test {
namespace {

bool have_uftrace() {
  return run({"sh", "-c", "command -v uftrace"}).status == 0;
}
#define REQUIRE_UFTRACE()     \
  ASSERT_TRUE(have_uftrace()) \
      << "uftrace is not installed: apt-get install uftrace (tools/install-deps.sh)"

// Function name -> calls, from `uftrace report` (the last two columns: calls, name).
std::map<std::string, uint64_t> report(const std::string& data) {
  RunResult r = run({"uftrace", "report", "-d", data, "--no-pager", "-s", "call"}, 300);
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<std::string, uint64_t> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> cols;
    std::string c;
    while (f >> c) cols.push_back(c);
    if (cols.size() < 2 || cols.back().find_first_of(":(") != std::string::npos) continue;
    uint64_t calls = 0;
    try {
      calls = std::stoull(cols[cols.size() - 2]);
    } catch (...) {
      continue;  // the header lines
    }
    out[cols.back()] += calls;
  }
  return out;
}

std::string hex_name(uint64_t a) {
  std::ostringstream s;
  s << "fn_" << std::hex << a;
  return s.str();
}

TEST(Uftrace, NamesEveryFunctionOfTheStrippedFixtureUnderEachNameItIsMappedAs) {
  REQUIRE_UFTRACE();
  std::string dir = fixtures_dir() + "/funcrec";
  std::string stripped = dir + "/stripped/libfr_fixture.so.1.2.3";
  std::string syms = temp_dir() + "/uftrace-syms";
  RunResult s =
      run({cudatool_bin(), "symbolize", stripped, "--format", "uftrace", "-o", syms, "--json"});
  ASSERT_EQ(s.status, 0) << s.err;
  for (const char* n :
       {"libfr_fixture.so.1.2.3.sym", "libfr_fixture.so.1.sym", "libfr_fixture.so.sym"})
    EXPECT_TRUE(std::filesystem::exists(syms + "/" + n)) << n;
  // What each name stands for: nm on the unstripped copy (exports by name, the static functions
  // as the fn_<address> the symbol file calls them).
  std::map<std::string, std::string> expected;  // our name -> nm's
  for (const auto& f : nm_functions(dir + "/libfr_fixture.so.1.2.3"))
    expected[f.global ? f.name : hex_name(f.start)] = f.name.substr(0, f.name.find('.'));
  for (const char* as : {"libfr_fixture.so.1.2.3", "libfr_fixture.so.1", "libfr_fixture.so"}) {
    SCOPED_TRACE(as);
    std::string data = temp_dir() + "/uftrace-" + as;
    RunResult r = run({"uftrace", "record", "--force", "-d", data, "-P", ".@libfr_fixture.so",
                       "--with-syms", syms, dir + "/fr_probe", dir + "/stripped/" + as, "tree"},
                      300);
    ASSERT_EQ(r.status, 0) << r.err;
    auto calls = report(data);
    // The fixture's calls by nm's names: fr_tree twice, fr_mid 4 times, each leaf 4 times.
    std::map<std::string, uint64_t> by_nm;
    for (const auto& [name, n] : calls) {
      EXPECT_EQ(name.find('<'), std::string::npos) << "unnamed: " << name;
      auto it = expected.find(name);
      if (it != expected.end()) by_nm[it->second] += n;
    }
    EXPECT_EQ(by_nm["fr_tree"], 2u);
    EXPECT_EQ(by_nm["fr_mid"], 4u);
    EXPECT_EQ(by_nm["fr_leaf"], 4u);
    EXPECT_EQ(by_nm["fr_leaf2"], 4u);
  }
}

TEST(Uftrace, NamesEveryLibcudaFunctionOfAReplayedPrimaryContext) {
  REQUIRE_UFTRACE();
  DriverBuild build = shared_builds().front();
  CUDATOOL_REQUIRE_BUILD(build);
  std::string trace = temp_dir() + "/uftrace-trace_a.jsonl";
  RunResult imp = run({cudatool_bin(), "import", captures_dir() + "/trace_a.jsonl.xz", "-o", trace,
                       "--driver-version", build.version});
  ASSERT_EQ(imp.status, 0) << imp.err;
  std::string syms = temp_dir() + "/uftrace-syms-580";
  RunResult s =
      run({cudatool_bin(), "symbolize", build.lib_path, "--format", "uftrace", "-o", syms});
  ASSERT_EQ(s.status, 0) << s.err;
  std::string data = temp_dir() + "/uftrace-580";
  ReplayRun r = replay(trace, {"--deadline", "60"},
                       {"uftrace", "record", "--force", "-d", data, "-P", ".@libcuda.so.1",
                        "--with-syms", syms, cuda_probe_bin(), build.lib_path, "ctx"},
                       600);
  ASSERT_TRUE(r.report.is_object()) << r.run.err;
  bool retained = false;
  for (const auto& j : json_lines(r.run.out))
    if (j.value("call", "") == "cuDevicePrimaryCtxRetain") retained = j.value("ret", -1) == 0;
  ASSERT_TRUE(retained) << r.run.out << r.run.err;
  auto calls = report(data);
  // The functions of the map: what a name in the report may be.
  RunResult f = run({cudatool_bin(), "functions", build.lib_path, "--json"});
  ASSERT_EQ(f.status, 0) << f.err;
  const nlohmann::json map = nlohmann::json::parse(f.out);
  std::set<std::string> ours;
  for (const auto& fn : map["functions"]) ours.insert(fn["name"].get<std::string>());
  size_t libcuda = 0;
  for (const auto& [name, n] : calls) {
    EXPECT_EQ(name.find('<'), std::string::npos) << "unnamed: " << name;
    libcuda += ours.count(name);
  }
  EXPECT_GT(libcuda, 500u) << "libcuda functions in the report";
  EXPECT_GT(calls["cuDevicePrimaryCtxRetain"], 0u);
  EXPECT_GT(calls["cuInit"], 0u);
}

}  // namespace
}  // namespace cudatool::test
