// End to end: a stripped library (tests/fixtures/symbolize) whose unexported function crashes.
// gdb shows `??` for it; with the symbol file cudatool writes, gdb (both through
// debug-file-directory and through add-symbol-file), addr2line and perf show its derived name,
// fn_<address>, where the address comes from the unstripped build's own .symtab (readelf -s).
#include <gtest/gtest.h>

#include <regex>

#include "frames_helpers.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Crashy {
  std::string dir = fixtures_dir() + "/symbolize";
  std::string main = dir + "/crashy_main";
  std::string stripped = dir + "/stripped/libcrashy.so";
  std::string unstripped = dir + "/unstripped/libcrashy.so";
  std::map<std::string, uint64_t> addr;  // unexported function -> address, from readelf -s
  std::string work = temp_dir() + "/crashy";
  std::string sym = work + "/crashy.sym";
  std::string debug_dir = work + "/debug";

  std::string derived(const std::string& fn) { return "fn_" + fmt_hex(addr.at(fn)).substr(2); }
  // Runs with the stripped library first in the search path.
  RunResult sh_env(const std::string& cmd, int timeout = 120) {
    return sh("LD_LIBRARY_PATH=" + quote(dir + "/stripped") + " HOME=" + quote(work) + " " + cmd +
                  " 2>&1",
              timeout);
  }
  std::string gdb(const std::vector<std::string>& commands) {
    std::string c = "gdb -batch -nx -ex " + quote("set debuginfod enabled off");
    for (const auto& x : commands) c += " -ex " + quote(x);
    return sh_env(c + " --args " + quote(main)).out;
  }
};

class SymbolizeE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& s : readelf_symbols(c.unstripped, false)) {
      if (s.type == "FUNC" && s.bind != "GLOBAL") c.addr[s.name] = s.value;
    }
    for (const char* fn : {"crash_here", "middle", "hidden_helper", "spin_inner"}) {
      ASSERT_EQ(c.addr.count(fn), 1u) << fn << " not in the unstripped fixture's .symtab";
    }
    // The premise: the stripped library names none of them.
    for (const auto& s : readelf_symbols(c.stripped, false)) {
      ASSERT_EQ(c.addr.count(s.name), 0u) << s.name << " is still visible in the stripped file";
    }
    ASSERT_EQ(run({"mkdir", "-p", c.work}).status, 0);
    RunResult r =
        run({cudatool_bin(), "symbolize", c.stripped, "-o", c.sym, "--debug-dir", c.debug_dir});
    ASSERT_EQ(r.status, 0) << r.err;
  }
  Crashy c;
};

TEST_F(SymbolizeE2E, GdbShowsQuestionMarksWithoutTheSymbolFile) {
  std::string out = c.gdb({"set debug-file-directory /nonexistent", "run", "bt"});
  EXPECT_NE(out.find("SIGSEGV"), std::string::npos) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(#0 .* in (\S+) \(\) from \S*libcrashy)")))
      << out;
  EXPECT_EQ(m[1], "??");
  EXPECT_EQ(out.find("fn_"), std::string::npos) << out;
}

TEST_F(SymbolizeE2E, GdbFindsItInDebugFileDirectory) {
  std::string out = c.gdb({"set debug-file-directory " + c.debug_dir, "run", "bt"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(#0 .* in (\S+) \(\) from \S*libcrashy)")))
      << out;
  EXPECT_EQ(m[1], c.derived("crash_here")) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("#1 .* in " + c.derived("middle") + " "))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("#2 .* in " + c.derived("hidden_helper") + " ")))
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("#3 .* in crashy_entry ")));
}

TEST_F(SymbolizeE2E, GdbLoadsItWithAddSymbolFile) {
  // The library is already loaded when the crash is seen: add the file at its load address,
  // then reload the shared libraries so that their own (empty) symbols do not shadow it.
  std::string out = c.gdb({"set debug-file-directory /nonexistent", "run",
                           "eval \"add-symbol-file " + c.sym + " -o %lu\", crashy_lib_base",
                           "nosharedlibrary", "sharedlibrary", "bt"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(#0 .* in (\S+) \(\) from \S*libcrashy)")))
      << out;
  EXPECT_EQ(m[1], c.derived("crash_here")) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("#2 .* in " + c.derived("hidden_helper") + " ")))
      << out;
}

TEST_F(SymbolizeE2E, AddrResolvesTheCrashAddressFromGdb) {
  std::string out =
      c.gdb({"set debug-file-directory /nonexistent", "run", "p/x $pc", "p/x crashy_lib_base"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\$1 = (0x[0-9a-f]+)\s+\$2 = (0x[0-9a-f]+))")))
      << out;
  uint64_t pc = std::stoull(m[1], nullptr, 16), base = std::stoull(m[2], nullptr, 16);
  ASSERT_GT(pc, base);
  JsonRun r =
      cudatool_json_run({"addr", "--json", "--base", fmt_hex(base), c.stripped, fmt_hex(pc)});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto& x = r.json["results"][0];
  EXPECT_EQ(hex_field(x["function"]["start"]), c.addr["crash_here"]);
  EXPECT_EQ(x["function"]["name"], c.derived("crash_here"));
  EXPECT_EQ(x["offset"].get<uint64_t>(), pc - base - c.addr["crash_here"]);
}

TEST_F(SymbolizeE2E, Addr2lineNamesIt) {
  for (const char* fn : {"crash_here", "middle", "spin_inner"}) {
    RunResult with = run({"addr2line", "-f", "-e", c.sym, fmt_hex(c.addr[fn] + 1)});
    EXPECT_EQ(with.out.substr(0, with.out.find('\n')), c.derived(fn)) << with.out;
    RunResult without = run({"addr2line", "-f", "-e", c.stripped, fmt_hex(c.addr[fn] + 1)});
    EXPECT_EQ(without.out.substr(0, without.out.find('\n')), "??") << without.out;
  }
}

TEST_F(SymbolizeE2E, PerfReportNamesIt) {
  std::string data = c.work + "/perf.data";
  RunResult rec = c.sh_env("perf record -q -e cpu-clock --no-buildid-cache -o " + quote(data) +
                           " -- " + quote(c.main) + " spin 300000000");
  ASSERT_EQ(rec.status, 0) << "perf record cannot sample here (needs perf_event_open: root, or "
                              "kernel.perf_event_paranoid <= 1): "
                           << rec.out;
  // perf looks for <symfs>/usr/lib/debug/.build-id/xx/yyyy.debug, as gdb does in its directory.
  std::string symfs = c.work + "/symfs";
  ASSERT_EQ(run({cudatool_bin(), "symbolize", c.stripped, "--debug-dir", symfs + "/usr/lib/debug"})
                .status,
            0);
  auto top_symbol = [&](const std::string& fs) {
    RunResult rep = c.sh_env("perf report -i " + quote(data) + " --symfs=" + quote(fs) +
                             " --stdio --sort dso,sym");
    std::smatch m;
    std::regex row(R"(\n\s+[0-9.]+%\s+libcrashy\.so\s+\[\.\]\s+(\S+))");
    return std::regex_search(rep.out, m, row) ? m[1].str() : "(no libcrashy row) " + rep.out;
  };
  EXPECT_EQ(top_symbol(symfs), c.derived("spin_inner"));
  std::string bare = top_symbol(c.work + "/empty-symfs");
  EXPECT_EQ(bare.rfind("0x", 0), 0u) << bare;  // a raw address without the symbol file
}

}  // namespace
}  // namespace cudatool::test
