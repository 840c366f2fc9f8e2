// The cross-reference index of the stripped fixture (tests/fixtures/xrefs/xrefs_lib.c) is exactly
// the graph its source was written to have: the edges are listed here by the names of the source,
// whose addresses come from the unstripped copy (readelf -s); cudatool reads the stripped copy.
// Also: the PLT counts against objdump, --string, --path (direct, through a pointer, none),
// TARGET and --from in text and JSON, and the SQLite views.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "frames_helpers.hpp"
#include "harness.hpp"
#include "xrefs_support.hpp"

namespace cudatool::test {
namespace {

using Edge = std::tuple<std::string, std::string, std::string>;  // from, kind, to

class XrefsFixture : public ::testing::Test {
 protected:
  // variant_: "" (no CET) or "-ibt" (endbr64 everywhere, .plt.sec stubs).
  std::string lib() const { return fixtures_dir() + "/xrefs/stripped/libxrefs" + variant_ + ".so"; }
  std::string unstripped() const {
    return fixtures_dir() + "/xrefs/unstripped/libxrefs" + variant_ + ".so";
  }

  void SetUp() override {
    for (const auto& s : readelf_symbols(unstripped(), /*dynamic_only=*/false)) {
      if ((s.type == "FUNC" || s.type == "OBJECT") && s.ndx != "UND" && !s.name.empty())
        symbols_[s.value] = {s.name, s.size};
    }
    ASSERT_GT(symbols_.size(), 20u) << "readelf -s " << unstripped();
    sections_ = readelf_sections(lib());
  }

  // "name", "name+8", "ioctl@plt", "close@got", "\"text\"", ".got.plt+0x10", "fn_…".
  std::string describe(const std::string& db, uint64_t a) {
    auto plt = sqlite_rows(db, "SELECT name FROM plt WHERE address = " + std::to_string(a));
    if (!plt.empty()) return plt[0][0] + "@plt";
    auto got = sqlite_rows(db, "SELECT name FROM got WHERE address = " + std::to_string(a));
    if (!got.empty()) return got[0][0] + "@got";
    auto str = sqlite_rows(db, "SELECT text FROM strings WHERE address = " + std::to_string(a));
    if (!str.empty()) return "\"" + str[0][0] + "\"";
    auto it = symbols_.upper_bound(a);
    if (it != symbols_.begin()) {
      --it;
      if (a == it->first) return it->second.first;
      if (a - it->first < it->second.second)
        return it->second.first + "+" + std::to_string(a - it->first);
    }
    for (const auto& s : sections_) {
      if (s.flags.find('A') != std::string::npos && a >= s.addr && a - s.addr < s.size)
        return s.name + "+" + fmt_hex(a - s.addr);
    }
    return fmt_hex(a);
  }

  // The source's name for a path node cudatool printed ("fn_11e0" for an unexported function).
  std::string describe_name(const std::string& node) {
    if (node.rfind("fn_", 0) != 0) return node;
    auto it = symbols_.find(std::stoull(node.substr(3), nullptr, 16));
    return it == symbols_.end() ? node : it->second.first;
  }
  uint64_t symbol(const std::string& name) {
    for (const auto& [a, s] : symbols_)
      if (s.first == name) return a;
    ADD_FAILURE() << "no symbol " << name;
    return 0;
  }
  std::string section_of(uint64_t a) {
    for (const auto& s : sections_)
      if (s.flags.find('A') != std::string::npos && a >= s.addr && a - s.addr < s.size)
        return s.name;
    return "?";
  }

  void check_exact_graph();

  std::string variant_;
  std::map<uint64_t, std::pair<std::string, uint64_t>> symbols_;
  std::vector<ReadelfSection> sections_;
};

class XrefsFixtureIbt : public XrefsFixture {
 protected:
  void SetUp() override {
    variant_ = "-ibt";
    XrefsFixture::SetUp();
  }
};

void XrefsFixture::check_exact_graph() {
  const std::string db = build_index(lib(), "fixture" + variant_);
  std::set<Edge> got;
  for (const auto& r : sqlite_rows(db,
                                   "SELECT r.site, r.kind, r.target, f.start, r.conditional FROM "
                                   "refs r LEFT JOIN functions f ON f.id = r.from_function")) {
    uint64_t site = std::stoull(r[0]), target = std::stoull(r[2]);
    std::string from;
    if (r[3].empty()) {
      from = describe(db, site);  // a relocated slot: data symbol + offset
    } else {
      // A function of the source by its symbol; code no symbol names is the PLT (the linker
      // gives it FDEs of its own): named by its section.
      auto it = symbols_.find(std::stoull(r[3]));
      from = it != symbols_.end() ? it->second.first : section_of(site);
    }
    got.emplace(from, r[1], describe(db, target));
  }
  const std::set<Edge> expected = {
      {"xr_direct", "call", "leaf_a"},
      {"xr_direct", "call", "leaf_b"},
      {"xr_tail", "tail_jump", "leaf_b"},
      {"xr_table", "lea", "xr_handlers"},
      {"xr_handlers", "pointer", "by_table_0"},
      {"xr_handlers+8", "pointer", "by_table_1"},
      {"by_table_1", "tail_jump", "ioctl@plt"},
      {"xr_take", "lea", "by_lea"},
      {"xr_take", "store", "xr_sink"},
      {"xr_load", "load", "xr_config"},
      {"xr_name", "lea", "xr_names"},
      {"xr_names", "pointer", "\"xrefs fixture: alpha name\""},
      {"xr_names+8", "pointer", "\"xrefs fixture: beta name\""},
      {"xr_open", "call", "open@plt"},
      {"xr_open", "call", "puts@plt"},
      {"xr_open", "lea", "\"xrefs fixture: cannot open the RM device\""},
      {"xr_mmap", "call", "mmap@plt"},
      {"xr_mmap", "call", "puts@plt"},
      {"xr_mmap", "lea", "\"xrefs fixture: mmap failed\""},
      {"xr_ioctl", "tail_jump", "ioctl@plt"},
      {"xr_close", "load", "close@got"},
      {"xr_close", "store", "xr_close_ptr"},
      {"xr_close", "tail_jump", "close@plt"},
      {"xr_path", "call", "path_mid"},
      {"path_mid", "tail_jump", "path_low"},
      {"path_low", "call", "ioctl@plt"},
  };
  // The PLT stubs: lazy PLT0 pushes and jumps through .got.plt; each stub (in .plt.sec with IBT)
  // jumps through its import's slot.
  std::set<Edge> expected_all = expected;
  const std::string stubs = variant_.empty() ? ".plt" : ".plt.sec";
  for (const char* e : {".got.plt+0x8", ".got.plt+0x10"}) expected_all.emplace(".plt", "load", e);
  for (const char* e : {"puts@got", "mmap@got", "ioctl@got", "open@got"})
    expected_all.emplace(stubs, "load", e);
  expected_all.emplace(".plt.got", "load", "close@got");
  for (const auto& e : expected_all) {
    EXPECT_EQ(got.count(e), 1u) << variant_ << " missing: " << std::get<0>(e) << " "
                                << std::get<1>(e) << " " << std::get<2>(e);
  }
  for (const auto& e : got) {
    EXPECT_EQ(expected_all.count(e), 1u) << variant_ << " unexpected: " << std::get<0>(e) << " "
                                         << std::get<1>(e) << " " << std::get<2>(e);
  }
  // The PLT counts are objdump's too.
  ObjdumpXrefs od = objdump_xrefs(lib());
  auto plt = sqlite_rows(db, "SELECT import, count(*) FROM import_calls GROUP BY 1");
  std::map<std::string, uint64_t> mine;
  for (const auto& r : plt) mine[r[0]] = std::stoull(r[1]);
  EXPECT_EQ(mine, od.plt_branches);
  EXPECT_EQ(mine["ioctl"], 3u);
  // Each PLT entry is where objdump puts its <NAME@plt> label (after endbr64 stubs too).
  RunResult labels = sh("objdump -d -j .plt -j .plt.got -j .plt.sec '" + lib() +
                        "' | grep -E '^[0-9a-f]+ <[^>]+@plt>:$'");
  std::set<std::pair<uint64_t, std::string>> od_labels, ours;
  std::istringstream ls(labels.out);
  for (std::string a, n; ls >> a >> n;) {
    od_labels.emplace(std::stoull(a, nullptr, 16), n.substr(1, n.find("@plt") - 1));
  }
  for (const auto& r : sqlite_rows(db, "SELECT address, name FROM plt"))
    ours.emplace(std::stoull(r[0]), r[1]);
  EXPECT_EQ(ours, od_labels);
  EXPECT_EQ(ours.size(), 5u);
}

TEST_F(XrefsFixture, IndexIsExactlyTheGraphOfTheSource) {
  check_exact_graph();
}

TEST_F(XrefsFixtureIbt, IndexIsExactlyTheGraphOfTheSource) {
  check_exact_graph();
}

TEST_F(XrefsFixture, TargetsAndFrom) {
  RunResult t = run({cudatool_bin(), "xrefs", lib(), "ioctl"});
  EXPECT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("ioctl@plt"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("3 references from 3 functions"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("xr_ioctl+0x"), std::string::npos) << t.out;

  // Exit status 1: one of the targets (xr_direct, which nothing in the library calls) has none.
  JsonRun j = cudatool_json_run({"xrefs", lib(), "ioctl@plt", "xr_direct", "--json"});
  ASSERT_EQ(j.status, 1) << j.err;
  EXPECT_EQ(j.json["schema"], "cudatool.xrefs/1");
  EXPECT_EQ(j.json["mode"], "to");
  ASSERT_EQ(j.json["targets"].size(), 2u);
  EXPECT_EQ(j.json["targets"][0]["kind"], "import");
  EXPECT_EQ(j.json["targets"][0]["count"], 3);
  EXPECT_EQ(j.json["targets"][1]["count"], 0);  // an export nobody in the library calls

  JsonRun f = cudatool_json_run({"xrefs", lib(), "xr_open", "--from", "--json"});
  ASSERT_EQ(f.status, 0) << f.err;
  std::set<std::string> what;
  for (const auto& r : f.json["functions"][0]["references"]) {
    what.insert(r["kind"].get<std::string>() + " " +
                (r["string"].is_null() ? r["target_name"].get<std::string>()
                                       : r["string"].get<std::string>()));
  }
  EXPECT_EQ(what, (std::set<std::string>{"call open@plt", "call puts@plt",
                                         "lea xrefs fixture: cannot open the RM device"}));

  // No reference: exit status 1. Unknown name: 2.
  EXPECT_EQ(run({cudatool_bin(), "xrefs", lib(), "xr_direct"}).status, 1);
  RunResult bad = run({cudatool_bin(), "xrefs", lib(), "no_such_function"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("no_such_function"), std::string::npos) << bad.err;
}

TEST_F(XrefsFixture, Strings) {
  JsonRun j = cudatool_json_run({"xrefs", lib(), "--string", "RM", "--json"});
  ASSERT_EQ(j.status, 0) << j.err;
  ASSERT_EQ(j.json["strings"].size(), 1u);
  EXPECT_EQ(j.json["strings"][0]["text"], "xrefs fixture: cannot open the RM device");
  ASSERT_EQ(j.json["strings"][0]["references"].size(), 1u);
  EXPECT_EQ(j.json["strings"][0]["references"][0]["function"], "xr_open");

  JsonRun re = cudatool_json_run({"xrefs", lib(), "--string", "/^xrefs fixture: [ab]/", "--json"});
  ASSERT_EQ(re.status, 0) << re.err;
  ASSERT_EQ(re.json["strings"].size(), 2u);
  for (const auto& s : re.json["strings"]) {
    ASSERT_EQ(s["references"].size(), 1u);
    EXPECT_EQ(s["references"][0]["kind"], "pointer");
    EXPECT_EQ(s["references"][0]["section"], ".data.rel.ro");
  }
  EXPECT_EQ(run({cudatool_bin(), "xrefs", lib(), "--string", "no such text"}).status, 1);
  EXPECT_EQ(run({cudatool_bin(), "xrefs", lib(), "--string", "/([/"}).status, 2);
}

TEST_F(XrefsFixture, Paths) {
  JsonRun d = cudatool_json_run({"xrefs", lib(), "--path", "xr_path", "ioctl", "--json"});
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_TRUE(d.json["found"].get<bool>());
  EXPECT_FALSE(d.json["through_pointer"].get<bool>());
  ASSERT_EQ(d.json["chains"].size(), 1u);
  std::vector<std::string> names;
  const auto& steps = d.json["chains"][0]["steps"];
  for (const auto& s : steps) names.push_back(describe_name(s["to"].get<std::string>()));
  EXPECT_EQ(names, (std::vector<std::string>{"path_mid", "path_low", "ioctl@plt"}));
  EXPECT_EQ(steps[1]["kind"], "tail_jump");

  JsonRun p = cudatool_json_run({"xrefs", lib(), "--path", "xr_table", "ioctl", "--json"});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_TRUE(p.json["found"].get<bool>());
  EXPECT_TRUE(p.json["through_pointer"].get<bool>());
  ASSERT_EQ(p.json["chains"].size(), 1u);
  const auto& ps = p.json["chains"][0]["steps"];
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_TRUE(ps[0]["pointer"].get<bool>());
  EXPECT_EQ(describe_name(ps[0]["to"].get<std::string>()), "by_table_1");
  EXPECT_EQ(hex_field(ps[0]["slot"]), symbol("xr_handlers") + 8);

  RunResult none =
      run({cudatool_bin(), "xrefs", lib(), "--path", fmt_hex(symbol("leaf_a")), "ioctl"});
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_NE(none.out.find("no chain"), std::string::npos) << none.out;
}

TEST_F(XrefsFixture, SqliteViews) {
  const std::string db = build_index(lib(), "fixture-views");
  auto meta = sqlite_rows(db, "SELECT value FROM meta WHERE key = 'schema'");
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_EQ(meta[0][0], "cudatool.index/1");
  // Callers of ioctl that also use a string containing 'RM': none in the fixture (xr_open uses
  // it but does not call ioctl) — and the callers of ioctl themselves.
  auto callers = sqlite_rows(db,
                             "SELECT DISTINCT from_function FROM import_calls WHERE import = "
                             "'ioctl' ORDER BY 1");
  EXPECT_EQ(callers.size(), 3u);
  auto rm = sqlite_rows(db,
                        "SELECT DISTINCT c.function FROM import_calls c JOIN string_refs s ON "
                        "s.from_function = c.from_function WHERE c.import = 'open' AND s.text "
                        "LIKE '%RM%'");
  ASSERT_EQ(rm.size(), 1u);
  EXPECT_EQ(rm[0][0], "xr_open");
  auto calls = sqlite_rows(db,
                           "SELECT caller, callee FROM calls WHERE caller = 'xr_direct' "
                           "ORDER BY site");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(std::stoull(sqlite_rows(
                db, "SELECT start FROM functions WHERE name = '" + calls[0][1] + "'")[0][0]),
            symbol("leaf_a"));
}

}  // namespace
}  // namespace cudatool::test
