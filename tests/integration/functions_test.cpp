// The function map of the real Debian libcuda builds against readelf and eu-readelf: every FDE
// (count, offset, start, size), the CIE and terminator counts, export names, gaps, `addr`
// lookups and the `symbolize` output (readelf -s / -n, gdb, addr2line). Every expected value is
// computed here from those tools' output for the same file.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "frames_helpers.hpp"
#include "harness.hpp"
#include "stacks_support.hpp"
#include "xrefs_support.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

class Functions : public ::testing::TestWithParam<DriverBuild> {
 protected:
  void SetUp() override { CUDATOOL_REQUIRE_BUILD(GetParam()); }
  std::string lib() const { return GetParam().lib_path; }
};

bool is_plt(const std::string& section) {
  return section.rfind(".plt", 0) == 0 || section.rfind(".iplt", 0) == 0;
}

TEST_P(Functions, EveryFdeMatchesReadelf) {
  ReadelfFrames expected = readelf_frames(lib());
  ASSERT_GT(expected.fdes.size(), 5000u) << "readelf found too few FDEs";
  JsonRun r = cudatool_json_run({"functions", "--json", lib()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& j = r.json;
  EXPECT_EQ(j["count"].get<size_t>(), expected.fdes.size());
  EXPECT_EQ(j["eh_frame"]["fdes"].get<size_t>(), expected.fdes.size());
  EXPECT_EQ(j["eh_frame"]["cies"].get<size_t>(), expected.cies.size());
  EXPECT_EQ(j["eh_frame"]["zero_terminators"].get<uint64_t>(), expected.terminators);
  EXPECT_EQ(j["eh_frame"]["damaged_records"].get<uint64_t>(), 0u);
  EXPECT_TRUE(j["eh_frame_hdr"]["agrees"].get<bool>()) << j["eh_frame_hdr"].dump();
  EXPECT_TRUE(j["diagnostics"].empty()) << j["diagnostics"].dump();
  // Each FDE, by its offset in .eh_frame: same start and end.
  std::map<uint64_t, const ReadelfFde*> by_offset;
  for (const auto& f : expected.fdes) by_offset[f.offset] = &f;
  ASSERT_EQ(by_offset.size(), expected.fdes.size());
  uint64_t prev = 0;
  size_t checked = 0;
  for (const auto& f : j["functions"]) {
    uint64_t off = hex_field(f["fde"]), start = hex_field(f["start"]);
    auto it = by_offset.find(off);
    ASSERT_NE(it, by_offset.end()) << "FDE at " << off << " unknown to readelf";
    ASSERT_EQ(start, it->second->start) << "FDE " << off;
    ASSERT_EQ(hex_field(f["end"]), it->second->end) << "FDE " << off;
    ASSERT_EQ(f["size"].get<uint64_t>(), it->second->end - it->second->start) << "FDE " << off;
    ASSERT_GE(start, prev) << "functions are not sorted by address";
    EXPECT_TRUE(f["in_hdr_table"].get<bool>());
    prev = start;
    ++checked;
  }
  EXPECT_EQ(checked, expected.fdes.size());
}

TEST_P(Functions, FdesMatchEuReadelf) {
  std::vector<EuFde> eu = eu_readelf_fdes(lib());
  ASSERT_GT(eu.size(), 5000u);
  JsonRun r = cudatool_json_run({"functions", "--json", lib()});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.json["count"].get<size_t>(), eu.size());
  // eu-readelf's offsets are right for .eh_frame but its start/range are what matter here.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> by_offset;
  for (const auto& f : eu) by_offset[f.offset] = {f.start, f.range};
  for (const auto& f : r.json["functions"]) {
    auto it = by_offset.find(hex_field(f["fde"]));
    ASSERT_NE(it, by_offset.end());
    ASSERT_EQ(hex_field(f["start"]), it->second.first);
    ASSERT_EQ(f["size"].get<uint64_t>(), it->second.second);
  }
}

TEST_P(Functions, ExportsNameTheirFunctions) {
  JsonRun r = cudatool_json_run({"functions", "--json", "--names", "exports", lib()});
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<uint64_t, std::set<std::string>> names;
  for (const auto& f : r.json["functions"]) {
    for (const auto& n : f["names"]) {
      EXPECT_EQ(n["source"], "export");
      names[hex_field(f["start"])].insert(n["name"].get<std::string>());
    }
  }
  size_t funcs = 0;
  for (const auto& s : readelf_symbols(lib(), true)) {
    if (s.ndx == "UND" || s.bind == "LOCAL" || (s.type != "FUNC" && s.type != "IFUNC")) continue;
    ++funcs;
    EXPECT_EQ(names[s.value].count(s.name), 1u) << s.name << " at " << s.value;
  }
  EXPECT_GT(funcs, 300u);
  EXPECT_EQ(r.json["unplaced_names"].size(), 0u);
}

// Gaps: the executable sections (readelf -S, flag X) minus the union of readelf's FDE ranges.
TEST_P(Functions, GapsAreExecutableBytesNoFdeCovers) {
  auto sections = readelf_sections(lib());
  ReadelfFrames frames = readelf_frames(lib());
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& f : frames.fdes) ranges.emplace_back(f.start, f.end);
  std::sort(ranges.begin(), ranges.end());
  uint64_t exec_bytes = 0, gap_bytes = 0, gaps = 0;
  for (const auto& s : sections) {
    if (s.flags.find('X') == std::string::npos || s.size == 0) continue;
    exec_bytes += s.size;
    uint64_t cursor = s.addr, end = s.addr + s.size;
    for (const auto& [b, e] : ranges) {
      if (e <= cursor || b >= end) continue;
      if (b > cursor) ++gaps, gap_bytes += b - cursor;
      cursor = std::max(cursor, std::min(e, end));
    }
    if (cursor < end) ++gaps, gap_bytes += end - cursor;
  }
  JsonRun r = cudatool_json_run({"functions", "--json", "--gaps", lib()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json& c = r.json["coverage"];
  EXPECT_EQ(c["exec_bytes"].get<uint64_t>(), exec_bytes);
  EXPECT_EQ(c["gap_bytes"].get<uint64_t>(), gap_bytes);
  EXPECT_EQ(c["gaps"].get<uint64_t>(), gaps);
  EXPECT_EQ(r.json["gaps"].size(), gaps);
  uint64_t listed = 0;
  for (const auto& g : r.json["gaps"]) listed += g["size"].get<uint64_t>();
  EXPECT_EQ(listed, gap_bytes);
  // The PLT-less .init has no FDE in any build: a gap of its own, classified as code.
  const ReadelfSection* init = find_section(sections, ".init");
  ASSERT_NE(init, nullptr);
  bool init_gap = false;
  for (const auto& g : r.json["gaps"]) {
    if (hex_field(g["start"]) == init->addr && g["section"] == ".init") {
      init_gap = true;
      EXPECT_EQ(g["kind"], "code");
    }
  }
  EXPECT_TRUE(init_gap);
}

TEST_P(Functions, AddrFindsTheFdeHoldingEachAddress) {
  ReadelfFrames frames = readelf_frames(lib());
  std::vector<std::string> args{"addr", "--json", lib()};
  std::vector<const ReadelfFde*> picked;
  for (size_t i = 0; i < frames.fdes.size(); i += 997) {
    const auto& f = frames.fdes[i];
    if (f.end == f.start) continue;
    picked.push_back(&f);
    args.push_back(fmt_hex(f.start));
    args.push_back(fmt_hex(f.end - 1));
  }
  JsonRun r = cudatool_json_run(args);
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.json["results"].size(), 2 * picked.size());
  for (size_t i = 0; i < picked.size(); ++i) {
    for (int k = 0; k < 2; ++k) {
      const json& x = r.json["results"][2 * i + k];
      ASSERT_FALSE(x["function"].is_null()) << x.dump();
      EXPECT_EQ(hex_field(x["function"]["start"]), picked[i]->start);
      EXPECT_EQ(x["offset"].get<uint64_t>(), k == 0 ? 0 : picked[i]->end - 1 - picked[i]->start);
    }
  }
  // Runtime addresses: the same lookups through a load base, as from /proc/PID/maps.
  const uint64_t base = 0x7f3a1c000000;
  const ReadelfFde& f = *picked.back();
  JsonRun rb = cudatool_json_run(
      {"addr", "--json", "--base", fmt_hex(base), lib(), fmt_hex(base + f.start + 1)});
  ASSERT_EQ(rb.status, 0) << rb.err;
  EXPECT_EQ(hex_field(rb.json["results"][0]["address"]), f.start + 1);
  EXPECT_EQ(hex_field(rb.json["results"][0]["function"]["start"]), f.start);
  // An address in .init (no FDE) is a finding: exit status 1, the gap named.
  auto sections = readelf_sections(lib());
  const ReadelfSection* init = find_section(sections, ".init");
  ASSERT_NE(init, nullptr);
  JsonRun rg = cudatool_json_run({"addr", "--json", lib(), fmt_hex(init->addr + 1)});
  EXPECT_EQ(rg.status, 1) << rg.err;
  EXPECT_TRUE(rg.json["results"][0]["function"].is_null());
  EXPECT_EQ(hex_field(rg.json["results"][0]["gap"]["start"]), init->addr);
  EXPECT_EQ(rg.json["results"][0]["section"], ".init");
  // Bad input.
  EXPECT_EQ(run({cudatool_bin(), "addr", lib(), "0xzz"}).status, 2);
  EXPECT_EQ(run({cudatool_bin(), "addr", "--base", "0x1000", lib(), "0x10"}).status, 2);
}

TEST_P(Functions, SymbolFileMatchesReadelfAndGdbUsesIt) {
  std::string dir = temp_dir() + "/sym-" + GetParam().version;
  std::string out = dir + "/lib.sym";
  RunResult mk = run({"mkdir", "-p", dir});
  ASSERT_EQ(mk.status, 0);
  JsonRun s = cudatool_json_run({"symbolize", "--json", "--names", "exports", lib(), "-o", out,
                                 "--debug-dir", dir + "/debug"});
  ASSERT_EQ(s.status, 0) << s.err;
  // The build id note is the library's (readelf -n on both).
  auto build_id = [](const std::string& p) {
    RunResult n = run({"readelf", "-n", p});
    auto at = n.out.find("Build ID: ");
    return at == std::string::npos ? std::string() : n.out.substr(at + 10, 40);
  };
  ASSERT_FALSE(build_id(lib()).empty());
  EXPECT_EQ(build_id(out), build_id(lib()));
  EXPECT_EQ(s.json["build_id"], build_id(lib()));
  // Section addresses are the library's.
  auto lib_secs = readelf_sections(lib());
  for (const auto& x : readelf_sections(out)) {
    if (x.flags.find('A') == std::string::npos) continue;
    const ReadelfSection* orig = find_section(lib_secs, x.name);
    ASSERT_NE(orig, nullptr) << x.name;
    EXPECT_EQ(x.addr, orig->addr) << x.name;
    EXPECT_EQ(x.size, orig->size) << x.name;
  }
  // .symtab: one FUNC per FDE outside the PLT (fn_<hex> or the export), exports as in .dynsym.
  std::map<uint64_t, std::vector<ReadelfSymbol>> syms;
  for (const auto& y : readelf_symbols(out, false)) syms[y.value].push_back(y);
  auto secs_of = [&](uint64_t a) {
    for (const auto& x : lib_secs)
      if (x.flags.find('A') != std::string::npos && a >= x.addr && a < x.addr + x.size)
        return x.name;
    return std::string();
  };
  std::set<uint64_t> exported;
  for (const auto& d : readelf_symbols(lib(), true)) {
    if (d.ndx == "UND" || d.bind == "LOCAL") continue;
    exported.insert(d.value);
    bool found = false;
    for (const auto& y : syms[d.value]) {
      if (y.name != d.name) continue;
      found = true;
      EXPECT_EQ(y.size, d.size) << d.name;
      EXPECT_EQ(y.type, d.type) << d.name;
      EXPECT_EQ(y.bind, d.bind) << d.name;
    }
    EXPECT_TRUE(found) << d.name;
  }
  ReadelfFrames frames = readelf_frames(lib());
  std::string derived_example, export_example;
  uint64_t derived_addr = 0, export_addr = 0;
  size_t plt = 0;
  for (const auto& f : frames.fdes) {
    if (is_plt(secs_of(f.start))) {
      ++plt;
      continue;
    }
    char name[32];
    std::snprintf(name, sizeof name, "fn_%llx", static_cast<unsigned long long>(f.start));
    bool found = false;
    for (const auto& y : syms[f.start]) {
      if (y.type != "FUNC" && y.type != "IFUNC") continue;
      if (exported.count(f.start) == 0) {
        EXPECT_EQ(y.name, name);
        EXPECT_EQ(y.bind, "LOCAL");
      }
      EXPECT_EQ(y.size, f.end - f.start) << y.name;
      found = true;
      if (exported.count(f.start) == 0 && derived_example.empty() && f.end - f.start > 8) {
        derived_example = y.name, derived_addr = f.start;
      }
      if (exported.count(f.start) != 0 && export_example.empty() && f.end - f.start > 8) {
        export_example = y.name, export_addr = f.start;
      }
    }
    ASSERT_TRUE(found) << name;
  }
  EXPECT_EQ(s.json["plt_skipped"].get<size_t>(), plt);
  ASSERT_FALSE(derived_example.empty());
  ASSERT_FALSE(export_example.empty());
  // gdb finds the file through debug-file-directory by build id and names both kinds.
  RunResult g = run({"gdb", "-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex",
                     "set debug-file-directory " + dir + "/debug", "-ex", "file " + lib(), "-ex",
                     "info symbol " + fmt_hex(derived_addr + 3), "-ex",
                     "info symbol " + fmt_hex(export_addr + 5)},
                    300);
  EXPECT_NE(g.out.find(derived_example + " + 3 in section .text"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find(export_example + " + 5 in section .text"), std::string::npos) << g.out;
  // addr2line reads the same .symtab.
  RunResult a = run({"addr2line", "-f", "-e", out, fmt_hex(derived_addr + 3)});
  EXPECT_EQ(a.out.substr(0, a.out.find('\n')), derived_example) << a.out;
}

// The table for people says what the JSON says: same rows, same names.
TEST_P(Functions, TextTableMatchesJson) {
  JsonRun j = cudatool_json_run({"functions", "--json", lib()});
  ASSERT_EQ(j.status, 0) << j.err;
  RunResult t = run({cudatool_bin(), "functions", lib()});
  ASSERT_EQ(t.status, 0) << t.err;
  std::istringstream in(t.out);
  std::string line;
  size_t i = 0;
  const json& fns = j.json["functions"];
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string start, end, size, section, name;
    if (!(ls >> start >> end >> size >> section >> name) || start.rfind("0x", 0) != 0) continue;
    ASSERT_LT(i, fns.size());
    EXPECT_EQ(start, fns[i]["start"].get<std::string>());
    EXPECT_EQ(end, fns[i]["end"].get<std::string>());
    EXPECT_EQ(std::stoull(size), fns[i]["size"].get<uint64_t>());
    EXPECT_EQ(name.substr(0, name.find(',')), fns[i]["name"].get<std::string>());
    ++i;
  }
  EXPECT_EQ(i, fns.size());
}

// With the driver tables' names (the default), the body behind each exported wrapper is named
// "<export>.impl" at the address `tables --kind dispatch` gives (checked there against gdb), and
// gdb resolves that name from the symbol file.
TEST_P(Functions, TableNamesReachTheMapAndGdb) {
  JsonRun t = cudatool_json_run({"tables", "--json", "--kind", "dispatch", lib()});
  ASSERT_EQ(t.status, 0) << t.err;
  std::map<uint64_t, std::string> impl;
  for (const auto& e : t.json["dispatch"]["entries"]) {
    if (e["implementation"].is_null()) continue;
    impl.emplace(hex_field(e["implementation"]), e["export"].get<std::string>() + ".impl");
  }
  ASSERT_GT(impl.size(), 300u);
  JsonRun r = cudatool_json_run({"functions", "--json", lib()});
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<uint64_t, std::set<std::string>> names;
  for (const auto& f : r.json["functions"]) {
    for (const auto& n : f["names"])
      names[hex_field(f["start"])].insert(n["name"].get<std::string>());
  }
  for (const auto& [addr, name] : impl) EXPECT_EQ(names[addr].count(name), 1u) << name;
  // One of them through gdb and the symbol file.
  std::string dir = temp_dir() + "/symimpl-" + GetParam().version;
  ASSERT_EQ(run({"mkdir", "-p", dir}).status, 0);
  std::string out = dir + "/lib.sym";
  ASSERT_EQ(run({cudatool_bin(), "symbolize", lib(), "-o", out}).status, 0);
  auto [addr, name] = *std::next(impl.begin(), static_cast<long>(impl.size() / 2));
  char expr[64];
  std::snprintf(expr, sizeof expr, "info symbol 0x%llx", static_cast<unsigned long long>(addr));
  RunResult g = run({"gdb", "-batch", "-nx", "-ex", "file " + out, "-ex", expr});
  EXPECT_NE(g.out.find(name + " in section .text"), std::string::npos) << g.out << g.err;
}

TEST_P(Functions, HumanOutputsRender) {
  for (std::vector<std::string> args : {std::vector<std::string>{"functions", lib()},
                                        {"functions", "--gaps", lib()},
                                        {"addr", lib(), "0x100000"}}) {
    args.insert(args.begin(), cudatool_bin());
    RunResult r = run(args);
    EXPECT_TRUE(r.status == 0 || (args[1] == "addr" && r.status == 1)) << args[1] << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    EXPECT_GT(r.out.size(), 80u);
  }
}

INSTANTIATE_TEST_SUITE_P(Debian, Functions, ::testing::ValuesIn(driver_builds()), driver_test_name);
// libcuda 580.159.04 from the shared test data (skipped, saying how to get it, when absent).
INSTANTIATE_TEST_SUITE_P(SharedData, Functions, ::testing::ValuesIn(shared_builds()),
                         driver_test_name);

// An unstripped library (the function-recording fixture): `functions`, `addr`, `index` and the
// call trees of decode name its static functions as nm does (.symtab), the same names; `--names
// exports` leaves them fn_<address>. Every expected name comes from nm of the same file.
TEST(FunctionsSymtab, AnUnstrippedLibraryIsNamedAsNmNamesIt) {
  const std::string lib = funcrec_lib();
  std::vector<NmFunction> nm = nm_functions(lib);
  JsonRun all = cudatool_json_run({"functions", lib, "--json"});
  ASSERT_EQ(all.status, 0) << all.err;
  JsonRun bare = cudatool_json_run({"functions", lib, "--json", "--names", "exports"});
  ASSERT_EQ(bare.status, 0) << bare.err;
  std::map<uint64_t, std::string> named, bare_named;
  for (const json& f : all.json["functions"])
    named[std::stoull(f["start"].get<std::string>(), nullptr, 16)] = f["name"];
  for (const json& f : bare.json["functions"])
    bare_named[std::stoull(f["start"].get<std::string>(), nullptr, 16)] = f["name"];
  // The index's functions table holds the same names.
  std::map<uint64_t, std::string> indexed;
  for (const auto& row :
       sqlite_rows(build_index(lib, "fr_symtab"), "SELECT start, name FROM functions"))
    indexed[std::stoull(row[0])] = row[1];
  int locals = 0;
  for (const NmFunction& f : nm) {
    auto it = named.find(f.start);
    if (it == named.end()) continue;  // a symbol no FDE starts at (nm lists aliases too)
    EXPECT_EQ(it->second, f.name) << std::hex << f.start;
    EXPECT_EQ(indexed[f.start], f.name) << std::hex << f.start;
    if (f.global) continue;
    ++locals;
    EXPECT_EQ(bare_named[f.start], fmt::format("fn_{:x}", f.start)) << f.name;
    RunResult addr = run({cudatool_bin(), "addr", lib, fmt::format("{:#x}", f.start + 1)});
    EXPECT_NE(addr.out.find(" " + f.name + "+0x1 "), std::string::npos) << addr.out;
  }
  EXPECT_GE(locals, 5) << "the fixture's static functions (fr_leaf, fr_dev_open, …)";
}

}  // namespace
}  // namespace cudatool::test
