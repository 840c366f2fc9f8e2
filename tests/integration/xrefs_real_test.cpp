// The cross-reference index of every real build (the Debian builds of tools/drivers.list and
// the shared 580.159.04, harness.hpp's shared_builds()) against independent tools, at test time:
//  - every direct call and jump that objdump -d labels <NAME@plt> is in the index, counted per
//    target (ioctl, mmap, open, …), and the index has no others;
//  - every direct call site objdump prints in .text is in the index, and no other;
//  - every lea that objdump prints with a RIP-relative operand landing on a C string (the test's
//    own scan of the file's bytes, StringOracle) is a string reference of the index, and no
//    other; every R_X86_64_RELATIVE (readelf -r) whose addend lands on one is its pointer use;
//  - the names are the function map's (`cudatool functions --json`): one naming source;
//  - the query planner's statistics are the ones SQLite's own ANALYZE writes;
//  - refs' rows are stored by target, then site, and a function's references come by site;
//  - the index written on one CPU is the index written on two;
//  - the sweep on two threads finds exactly what it finds on one, and the work given to run
//    beside it runs once, on the second thread (on the caller's with one CPU).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "analysis/driver_image.hpp"
#include "analysis/xrefs.hpp"
#include "frames_helpers.hpp"
#include "harness.hpp"
#include "xrefs_support.hpp"

namespace cudatool::test {
namespace {

using Pairs = std::set<std::pair<uint64_t, uint64_t>>;

Pairs pairs(const std::vector<std::vector<std::string>>& rows) {
  Pairs p;
  for (const auto& r : rows) p.emplace(std::stoull(r[0]), std::stoull(r[1]));
  return p;
}

// The first CPU of `all`, alone: an affinity that gives index and the sweep one CPU.
cpu_set_t first_cpu_of(const cpu_set_t& all) {
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  }
  return one;
}

// Up to five elements of a - b, for failure messages.
std::string sample_difference(const Pairs& a, const Pairs& b) {
  std::string s;
  int n = 0;
  for (const auto& e : a) {
    if (b.count(e) != 0) continue;
    if (n++ == 5) return s + " …";
    s += " " + fmt_hex(e.first) + "->" + fmt_hex(e.second);
  }
  return s;
}

class XrefsReal : public ::testing::TestWithParam<DriverBuild> {
 protected:
  void SetUp() override {
    CUDATOOL_REQUIRE_BUILD(GetParam());
    lib_ = GetParam().lib_path;
  }
  std::string lib_;
};

TEST_P(XrefsReal, AgreesWithObjdumpAndTheStringScan) {
  const std::string v = GetParam().version;
  const std::string db = build_index(lib_, "real-" + v);
  ObjdumpXrefs od = objdump_xrefs(lib_);
  ASSERT_GT(od.text_calls.size(), 1000u) << "objdump printed too few calls";

  // Calls and jumps into the PLT, per target.
  std::map<std::string, uint64_t> mine;
  uint64_t mine_total = 0;
  for (const auto& r : sqlite_rows(db,
                                   "SELECT p.name, count(*) FROM refs r JOIN plt p ON p.address = "
                                   "r.target WHERE r.kind IN ('call', 'tail_jump') GROUP BY 1")) {
    mine[r[0]] = std::stoull(r[1]);
    mine_total += std::stoull(r[1]);
  }
  EXPECT_EQ(mine, od.plt_branches);
  EXPECT_EQ(mine_total, od.plt_branch_total);
  EXPECT_GT(od.plt_branches["ioctl"], 0u);

  // Direct calls in .text.
  auto secs = readelf_sections(lib_);
  const ReadelfSection* text = find_section(secs, ".text");
  ASSERT_NE(text, nullptr);
  Pairs calls =
      pairs(sqlite_rows(db, "SELECT site, target FROM refs WHERE kind = 'call' AND site >= " +
                                std::to_string(text->addr) + " AND site < " +
                                std::to_string(text->addr + text->size)));
  EXPECT_EQ(calls.size(), od.text_calls.size());
  EXPECT_TRUE(std::includes(calls.begin(), calls.end(), od.text_calls.begin(), od.text_calls.end()))
      << "objdump's calls missing from the index:" << sample_difference(od.text_calls, calls);
  EXPECT_EQ(sample_difference(calls, od.text_calls), "") << "calls objdump does not print";

  // String references by lea: objdump's RIP-relative lea operands that land on a C string.
  StringOracle oracle(lib_);
  Pairs expected_lea;
  for (const auto& [site, target] : od.rip_leas) {
    if (oracle.is_string(target)) expected_lea.emplace(site, target);
  }
  Pairs lea = pairs(sqlite_rows(db,
                                "SELECT r.site, r.target FROM refs r JOIN strings s ON s.address "
                                "= r.target WHERE r.kind = 'lea'"));
  EXPECT_GT(expected_lea.size(), 100u);
  EXPECT_EQ(lea.size(), expected_lea.size());
  EXPECT_EQ(sample_difference(expected_lea, lea), "") << "string leas missing from the index";
  EXPECT_EQ(sample_difference(lea, expected_lea), "") << "string leas the scan does not find";

  // String references by relocated pointers (readelf -r), and the text of every string.
  Pairs expected_ptr;
  for (const auto& [slot, addend] : readelf_relative(lib_)) {
    if (oracle.is_string(addend)) expected_ptr.emplace(slot, addend);
  }
  Pairs ptr = pairs(sqlite_rows(db,
                                "SELECT r.site, r.target FROM refs r JOIN strings s ON s.address "
                                "= r.target WHERE r.kind = 'pointer'"));
  EXPECT_EQ(ptr.size(), expected_ptr.size());
  EXPECT_EQ(sample_difference(expected_ptr, ptr), "") << "string pointers missing";
  EXPECT_EQ(sample_difference(ptr, expected_ptr), "") << "string pointers readelf does not show";
  uint64_t strings = 0, bad_text = 0;
  for (const auto& r : sqlite_rows(db, "SELECT address, text FROM strings")) {
    ++strings;
    uint64_t a = std::stoull(r[0]);
    if (!oracle.is_string(a) || oracle.text(a) != r[1]) {
      if (++bad_text <= 5) ADD_FAILURE() << "string at " << fmt_hex(a) << ": " << r[1];
    }
  }
  EXPECT_EQ(bad_text, 0u);

  const size_t targets = mine.size();
  std::cout << v << ": " << calls.size() << " direct calls in .text (objdump "
            << od.text_calls.size() << "); " << mine_total << " calls/jumps into the PLT to "
            << targets << " targets (objdump " << od.plt_branch_total << "; ioctl " << mine["ioctl"]
            << ", mmap " << mine["mmap"] << ", mmap64 " << mine["mmap64"] << ", open "
            << mine["open"] << ", open64 " << mine["open64"] << "); " << lea.size()
            << " string leas (scan " << expected_lea.size() << "), " << ptr.size()
            << " string pointers (readelf -r " << expected_ptr.size() << "), " << strings
            << " strings\n";
  RecordProperty("text_calls", std::to_string(calls.size()));
  RecordProperty("plt_branches", std::to_string(mine_total));
  RecordProperty("string_leas", std::to_string(lea.size()));
}

// One naming source: every function is called in the index what `functions` calls it, with the
// same (name, source) lists.
TEST_P(XrefsReal, NamesAreTheFunctionMapsNames) {
  const std::string db = build_index(lib_, "names-" + GetParam().version);
  JsonRun f = cudatool_json_run({"functions", "--json", lib_}, 300);
  ASSERT_EQ(f.status, 0) << f.err;
  auto rows = sqlite_rows(db, "SELECT start, name FROM functions ORDER BY id");
  ASSERT_EQ(rows.size(), f.json["functions"].size());
  size_t named = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& fj = f.json["functions"][i];
    ASSERT_EQ(std::stoull(rows[i][0]), hex_field(fj["start"])) << i;
    ASSERT_EQ(rows[i][1], fj["name"].get<std::string>()) << i;
    named += !fj["names"].empty();
  }
  auto n = sqlite_rows(db, "SELECT count(DISTINCT function_id) FROM function_names");
  EXPECT_EQ(std::stoull(n[0][0]), named);
  EXPECT_EQ(f.json["named"].get<size_t>(), named);
}

// `index` counts refs' planner statistics while it writes the rows instead of running ANALYZE
// over them: every sqlite_stat1 row must be what ANALYZE writes on the same file.
TEST_P(XrefsReal, PlannerStatisticsAreWhatAnalyzeWrites) {
  const std::string db = build_index(lib_, "stat1-" + GetParam().version);
  const std::string stat1 = "SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx";
  auto ours = sqlite_rows(db, stat1);
  const std::string copy = db + ".analyzed";
  std::filesystem::copy_file(db, copy, std::filesystem::copy_options::overwrite_existing);
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(copy.c_str(), &h), SQLITE_OK);
  char* msg = nullptr;
  int rc = sqlite3_exec(h, "DELETE FROM sqlite_stat1; ANALYZE;", nullptr, nullptr, &msg);
  EXPECT_EQ(rc, SQLITE_OK) << (msg != nullptr ? msg : "");
  sqlite3_free(msg);
  sqlite3_close(h);
  auto analyzed = sqlite_rows(copy, stat1);
  EXPECT_EQ(ours, analyzed);
  size_t refs_rows = 0;
  for (const auto& r : ours) refs_rows += r[0] == "refs";
  EXPECT_EQ(refs_rows, 3u) << "refs_by_target, refs_by_from and refs_by_target_function";
}

// The rows of refs go in by target, then site (the two target indexes are appended as they do),
// and refs_by_from is on (from_function, site): a query by function lists its references by site
// without an ORDER BY, as it did when the rows went in by site.
TEST_P(XrefsReal, RefsAreStoredByTargetAndListedBySiteForAFunction) {
  const std::string db = build_index(lib_, "order-" + GetParam().version);
  auto rows = sqlite_rows(db, "SELECT target, site FROM refs ORDER BY rowid");
  ASSERT_GT(rows.size(), 100000u);
  std::pair<uint64_t, uint64_t> last{0, 0};
  for (size_t i = 0; i < rows.size(); ++i) {
    std::pair<uint64_t, uint64_t> at{std::stoull(rows[i][0]), std::stoull(rows[i][1])};
    ASSERT_LE(last, at) << "row " << i + 1 << " comes before the row above it";
    last = at;
  }
  // The 20 functions with the most references, each as a user would ask for them.
  auto busiest = sqlite_rows(db,
                             "SELECT from_function FROM refs WHERE from_function IS NOT NULL "
                             "GROUP BY 1 ORDER BY count(*) DESC LIMIT 20");
  ASSERT_EQ(busiest.size(), 20u);
  for (const auto& f : busiest) {
    const std::string q = "SELECT site FROM refs WHERE from_function = " + f[0];
    auto plan = sqlite_rows(db, "EXPLAIN QUERY PLAN " + q);
    ASSERT_FALSE(plan.empty());
    EXPECT_NE(plan[0].back().find("refs_by_from"), std::string::npos) << plan[0].back();
    auto sites = sqlite_rows(db, q);
    ASSERT_GT(sites.size(), 1u);
    for (size_t i = 1; i < sites.size(); ++i) {
      ASSERT_LE(std::stoull(sites[i - 1][0]), std::stoull(sites[i][0]))
          << "function " << f[0] << ": reference " << i;
    }
  }
}

// With two CPUs, index writes tables beside the sweep and builds the functions' indexes beside
// the gathering of refs' rows; with one it does each in turn. Both must write the same rows in
// the same order, and the same planner statistics.
TEST_P(XrefsReal, IndexOnOneCpuIsTheIndexOnTwo) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "SKIPPED: this process may use one CPU only";
  const cpu_set_t one = first_cpu_of(all);
  // The child inherits the affinity.
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const std::string db1 = build_index(lib_, "one-cpu-" + GetParam().version);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  const std::string db2 = build_index(lib_, "two-cpus-" + GetParam().version);
  for (const char* table :
       {"meta", "sections", "functions", "function_names", "refs", "strings", "plt", "got",
        "imports", "exports", "procaddress", "export_tables", "dispatch", "errors"}) {
    const std::string q = fmt::format("SELECT rowid, * FROM {} ORDER BY rowid", table);
    auto a = sqlite_rows(db1, q);
    auto b = sqlite_rows(db2, q);
    ASSERT_EQ(a.size(), b.size()) << table;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::string(table) == "meta" && a[i][1] == "path") continue;  // the paths differ
      ASSERT_EQ(a[i], b[i]) << table << " row " << i + 1;
    }
    EXPECT_FALSE(a.empty() && std::string(table) != "errors") << table;
  }
  const std::string stat1 = "SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx";
  EXPECT_EQ(sqlite_rows(db1, stat1), sqlite_rows(db2, stat1));
}

// The sweep cuts .text at a function start and sweeps the halves on two threads when the process
// may use two CPUs: limited to one CPU (affinity) it sweeps in one piece. Both must give the same
// references, in the same order, and the same counts. The work given to run beside the index
// runs once: on the second thread with two CPUs, on the caller's with one.
TEST_P(XrefsReal, TwoThreadSweepIsTheOneThreadSweep) {
  cpu_set_t all;
  CPU_ZERO(&all);
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "SKIPPED: this process may use one CPU only";
  auto sweep = [&](bool one_cpu) {
    const cpu_set_t one = first_cpu_of(all);
    EXPECT_EQ(sched_setaffinity(0, sizeof(cpu_set_t), one_cpu ? &one : &all), 0);
    auto img = DriverImage::open(lib_);
    EXPECT_TRUE(img) << lib_;
    int beside_runs = 0;
    pid_t beside_thread = 0;
    const XrefIndex x(**img, [&] {
      ++beside_runs;
      beside_thread = gettid();
    });
    EXPECT_EQ(beside_runs, 1) << (one_cpu ? "one CPU" : "two CPUs");
    if (one_cpu)
      EXPECT_EQ(beside_thread, gettid()) << "one CPU: beside the index on the caller's thread";
    else
      EXPECT_NE(beside_thread, gettid()) << "two CPUs: beside the index on the second thread";
    std::vector<Ref> refs(x.refs().begin(), x.refs().end());
    std::vector<uint64_t> entry(x.entry_window_targets().begin(), x.entry_window_targets().end());
    XrefStats st = x.stats();
    // By target, then site: every index once.
    std::vector<uint32_t> order(x.by_target().begin(), x.by_target().end());
    std::vector<bool> seen(refs.size(), false);
    for (size_t k = 0; k < order.size(); ++k) {
      EXPECT_FALSE(seen.at(order[k])) << "index " << order[k] << " twice";
      seen.at(order[k]) = true;
      if (k == 0) continue;
      const Ref& a = refs[order[k - 1]];
      const Ref& b = refs[order[k]];
      EXPECT_TRUE(a.target < b.target || (a.target == b.target && a.site <= b.site))
          << "by_target " << k << ": " << fmt_hex(a.target) << " then " << fmt_hex(b.target);
    }
    EXPECT_EQ(order.size(), refs.size());
    EXPECT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
    return std::make_tuple(refs, entry, st);
  };
  auto [r1, e1, s1] = sweep(true);
  auto [r2, e2, s2] = sweep(false);
  ASSERT_EQ(r1.size(), r2.size());
  for (size_t i = 0; i < r1.size(); ++i) {
    ASSERT_TRUE(r1[i].site == r2[i].site && r1[i].target == r2[i].target &&
                r1[i].from == r2[i].from && r1[i].kind == r2[i].kind &&
                r1[i].flags == r2[i].flags && r1[i].length == r2[i].length)
        << "reference " << i << " at " << fmt_hex(r1[i].site) << " / " << fmt_hex(r2[i].site);
  }
  EXPECT_EQ(e1, e2);
  EXPECT_EQ(s1.instructions, s2.instructions);
  EXPECT_EQ(s1.undecodable, s2.undecodable);
  EXPECT_EQ(s1.code_bytes, s2.code_bytes);
  EXPECT_EQ(s1.sections, s2.sections);
  EXPECT_GT(s1.instructions, 100000u);
}

INSTANTIATE_TEST_SUITE_P(Debian, XrefsReal, ::testing::ValuesIn(driver_builds()), driver_test_name);
// libcuda 580.159.04 from the shared test data (skipped, saying how to get it, when absent).
INSTANTIATE_TEST_SUITE_P(SharedData, XrefsReal, ::testing::ValuesIn(shared_builds()),
                         driver_test_name);

}  // namespace
}  // namespace cudatool::test
