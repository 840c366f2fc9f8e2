// function_map_with_names() reads the FDEs and two of the driver tables on a helper thread. Its
// map, names and diagnostics must be exactly those of building the map and then adding the names
// on one thread, in the same order: on every real build, and on damaged copies of one whose
// damage is met by both threads.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "analysis/driver_image.hpp"
#include "analysis/driver_tables.hpp"
#include "analysis/function_map.hpp"
#include "analysis/function_names.hpp"
#include "base/helper_thread.hpp"
#include "frames_helpers.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

std::vector<std::string> describe(const FunctionMap& map) {
  std::vector<std::string> out;
  for (const auto& f : map.functions()) {
    std::string line = fmt::format("{:x} {:x} {:x} {}", f.start, f.size, f.fde, f.in_hdr_table);
    for (const auto& n : map.names(f)) line += fmt::format(" [{} / {}]", n.name, n.source);
    out.push_back(std::move(line));
  }
  for (const auto& u : map.unplaced())
    out.push_back(fmt::format("unplaced {:x} {} / {}", u.address, u.name.name, u.name.source));
  out.push_back(fmt::format("hdr disagreements {}", map.hdr_check().disagreement_count));
  return out;
}

std::vector<std::string> messages(const Diagnostics& d) {
  std::vector<std::string> out;
  for (const auto& e : d.items()) out.push_back(e.message());
  out.push_back(fmt::format("count {}", d.count()));
  return out;
}

struct Both {
  std::vector<std::string> serial_map, threaded_map, serial_diag, threaded_diag;
};

Both build_both(const std::string& path) {
  Both b;
  auto one = DriverImage::open(path);
  auto two = DriverImage::open(path);
  if (!one || !two) {
    ADD_FAILURE() << path << ": cannot open";
    return b;
  }
  FunctionMap& serial = (*one)->facet<FunctionMap>();
  add_function_names(**one, serial);
  FunctionMap& threaded = function_map_with_names(**two);
  EXPECT_EQ(&threaded, &(*two)->facet<FunctionMap>()) << "the map is the image's facet";
  b.serial_map = describe(serial);
  b.threaded_map = describe(threaded);
  b.serial_diag = messages((*one)->diagnostics());
  b.threaded_diag = messages((*two)->diagnostics());
  return b;
}

class NamesOnTwoThreads : public ::testing::TestWithParam<DriverBuild> {
 protected:
  void SetUp() override { CUDATOOL_REQUIRE_BUILD(GetParam()); }
};

TEST_P(NamesOnTwoThreads, AreTheNamesOfOneThread) {
  Both b = build_both(GetParam().lib_path);
  ASSERT_GT(b.serial_map.size(), 10000u);
  EXPECT_EQ(b.threaded_map, b.serial_map);
  EXPECT_EQ(b.threaded_diag, b.serial_diag);
}

// Allowed one CPU, function_map_with_names() does the helper's work itself, after its own (the
// order a failed thread start takes too): still the one-thread map and reports.
TEST_P(NamesOnTwoThreads, OnOneCpuAreTheNamesOfOneThread) {
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  ASSERT_FALSE(HelperThread::another_cpu());
  Both b = build_both(GetParam().lib_path);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  ASSERT_GT(b.serial_map.size(), 10000u);
  EXPECT_EQ(b.threaded_map, b.serial_map);
  EXPECT_EQ(b.threaded_diag, b.serial_diag);
}

// add_name() against a plain model of its rules (one list per function start, in the order
// added, a (name, source) pair once; other addresses unplaced): names in address order, several
// for one function, then in random order with repeats and addresses where no function starts,
// so that lists grow at the end, move, and the search from the last one found is started both
// ahead of and behind the address.
TEST_P(NamesOnTwoThreads, AddedNamesLandWhereAPlainModelPutsThem) {
  auto img = DriverImage::open(GetParam().lib_path);
  ASSERT_TRUE(img);
  FunctionMap& map = (*img)->facet<FunctionMap>();
  auto fns = map.functions();
  ASSERT_GT(fns.size(), 10000u);
  using Pair = std::pair<std::string, std::string>;
  std::map<uint64_t, std::vector<Pair>> want;
  std::set<uint64_t> starts;
  for (const auto& f : fns) {
    starts.insert(f.start);
    for (const auto& n : map.names(f)) want[f.start].emplace_back(n.name, n.source);
  }
  std::vector<std::pair<uint64_t, Pair>> want_unplaced;
  auto add = [&](uint64_t at, const std::string& name, const std::string& source) {
    bool placed = map.add_name(at, name, source);
    EXPECT_EQ(placed, starts.count(at) == 1) << std::hex << at;
    if (!placed) {
      want_unplaced.push_back({at, {name, source}});
      return;
    }
    auto& list = want[at];
    if (std::find(list.begin(), list.end(), Pair{name, source}) == list.end())
      list.emplace_back(name, source);
  };
  std::mt19937_64 rng(20261205);
  for (size_t i = 0; i < fns.size(); i += 7) {
    add(fns[i].start, fmt::format("a{}", i), "test:ordered");
    if (i % 3 == 0) add(fns[i].start, fmt::format("b{}", i), "test:ordered");
  }
  for (int k = 0; k < 20000; ++k) {
    const Function& f = fns[rng() % fns.size()];
    uint64_t at = rng() % 8 == 0 ? f.start + 1 + rng() % 4 : f.start;
    std::string source = rng() % 2 ? "test:random" : "test:ordered";
    add(at, fmt::format("r{}", rng() % 3000), source);
  }
  for (const auto& f : fns) {
    std::vector<Pair> got;
    for (const auto& n : map.names(f)) got.emplace_back(n.name, n.source);
    // Two FDEs may start at one address: the names go to the first.
    if (&f != map.at(f.start)) {
      EXPECT_TRUE(got.empty()) << std::hex << f.start;
      continue;
    }
    ASSERT_EQ(got, want[f.start]) << std::hex << f.start;
  }
  ASSERT_EQ(map.unplaced().size(), want_unplaced.size());
  for (size_t i = 0; i < want_unplaced.size(); ++i) {
    EXPECT_EQ(map.unplaced()[i].address, want_unplaced[i].first);
    EXPECT_EQ(map.unplaced()[i].name.name, want_unplaced[i].second.first);
    EXPECT_EQ(map.unplaced()[i].name.source, want_unplaced[i].second.second);
  }
  size_t named = 0;
  std::map<std::string, uint64_t> by_source;  // functions named by each source, once each
  for (const auto& [at, list] : want) {
    named += !list.empty();
    std::set<std::string> sources;
    for (const auto& p : list) sources.insert(p.second);
    for (const auto& src : sources) ++by_source[src];
  }
  EXPECT_EQ(map.named_functions(), named);
  EXPECT_EQ(map.named_by_source(),
            (std::vector<std::pair<std::string, uint64_t>>(by_source.begin(), by_source.end())));
}

INSTANTIATE_TEST_SUITE_P(Debian, NamesOnTwoThreads, ::testing::ValuesIn(driver_builds()),
                         driver_test_name);
INSTANTIATE_TEST_SUITE_P(SharedData, NamesOnTwoThreads, ::testing::ValuesIn(shared_builds()),
                         driver_test_name);

// The Debian build the damaged copies are made from: 550 when cached, else the first.
std::string build_to_damage(const std::vector<DriverBuild>& builds) {
  for (const auto& b : builds)
    if (b.version.rfind("550.", 0) == 0) return b.lib_path;
  return builds.front().lib_path;
}

// Damage in .eh_frame (met by the helper reading the FDEs) and in the relocations' addends (met
// by both threads' tables): every report in the order one thread gives.
TEST(NamesOnTwoThreadsDamaged, ReportInTheOrderOfOneThread) {
  auto builds = driver_builds();
  ASSERT_FALSE(builds.empty());
  CUDATOOL_REQUIRE_BUILD(builds.front());
  const std::string src = build_to_damage(builds);
  const std::string orig = read_file(src);
  const auto secs = readelf_sections(src);
  const ReadelfSection* eh = find_section(secs, ".eh_frame");
  const ReadelfSection* rela = find_section(secs, ".rela.dyn");
  ASSERT_NE(eh, nullptr);
  ASSERT_NE(rela, nullptr);
  std::mt19937_64 rng(20261205);
  int mixed = 0;  // rounds whose reports come from the map and from the tables
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::string m = orig;
    for (int k = 0; k < 4; ++k) m[eh->offset + rng() % eh->size] = static_cast<char>(rng());
    // The top byte of some addends: those slots now point outside every section.
    for (int k = 0; k < 40; ++k) m[rela->offset + (rng() % (rela->size / 24)) * 24 + 23] = '\x7f';
    std::string path = write_temp("names-threads-" + std::to_string(round) + ".so", m);
    Both b = build_both(path);
    std::remove(path.c_str());
    EXPECT_EQ(b.threaded_map, b.serial_map);
    EXPECT_EQ(b.threaded_diag, b.serial_diag);
    bool from_map = false, from_tables = false;
    for (const auto& msg : b.serial_diag) {
      from_map |= msg.find(".eh_frame") != std::string::npos || msg.rfind("FDE", 0) == 0;
      from_tables |= msg.find("export table") != std::string::npos ||
                     msg.find("dispatch") != std::string::npos ||
                     msg.find("procaddress") != std::string::npos;
    }
    mixed += from_map && from_tables;
  }
  EXPECT_GT(mixed, 0) << "no round was damaged where both threads look: the test tests nothing";

  // .dynsym linked to a section that is no string table: the dynamic symbols' report comes
  // after the map's (one thread reads them last, to name the exports), and the exports are gone.
  const ReadelfSection* dynsym = find_section(secs, ".dynsym");
  const ReadelfSection* text = find_section(secs, ".text");
  ASSERT_NE(dynsym, nullptr);
  ASSERT_NE(text, nullptr);
  std::string m = orig;
  uint64_t shoff = 0;
  std::memcpy(&shoff, m.data() + 0x28, 8);
  uint32_t link = static_cast<uint32_t>(text->index);
  std::memcpy(m.data() + shoff + static_cast<uint64_t>(dynsym->index) * 64 + 40, &link, 4);
  // The 100th record of .eh_frame (an FDE) gets a CIE pointer to before the section: one report.
  uint64_t rec = eh->offset;
  for (int k = 0; k < 100; ++k) {
    uint32_t len = 0;
    std::memcpy(&len, m.data() + rec, 4);
    ASSERT_TRUE(len != 0 && len != 0xffffffffu && rec + 4 + len < eh->offset + eh->size);
    rec += 4 + len;
  }
  const uint32_t before_start = 0x7ffffff0;
  std::memcpy(m.data() + rec + 4, &before_start, 4);
  std::string path = write_temp("names-threads-dynsym.so", m);
  Both b = build_both(path);
  std::remove(path.c_str());
  EXPECT_EQ(b.threaded_map, b.serial_map);
  EXPECT_EQ(b.threaded_diag, b.serial_diag);
  size_t eh_at = b.serial_diag.size(), sym_at = b.serial_diag.size();
  for (size_t i = 0; i < b.serial_diag.size(); ++i) {
    if (eh_at == b.serial_diag.size() && b.serial_diag[i].find(".eh_frame") != std::string::npos)
      eh_at = i;
    if (b.serial_diag[i].find("does not name a string table") != std::string::npos) sym_at = i;
  }
  ASSERT_LT(eh_at, b.serial_diag.size()) << "the .eh_frame damage was not met";
  ASSERT_LT(sym_at, b.serial_diag.size()) << "the .dynsym damage was not met";
  EXPECT_LT(eh_at, sym_at);
}

// One damaged slot in each table read beside the map (a dispatch slot, a cuGetProcAddress row,
// an export-table slot: each relocation made to point outside every section). The two threads
// share the tables, the cuGetProcAddress table going to whichever is free first, and still
// report in one thread's order: dispatch, cuGetProcAddress, export tables.
TEST(NamesOnTwoThreadsDamaged, TableReportsInTheOrderOfOneThread) {
  auto builds = driver_builds();
  ASSERT_FALSE(builds.empty());
  CUDATOOL_REQUIRE_BUILD(builds.front());
  const std::string src = build_to_damage(builds);
  const std::string orig = read_file(src);
  const auto secs = readelf_sections(src);
  const ReadelfSection* rela = find_section(secs, ".rela.dyn");
  ASSERT_NE(rela, nullptr);
  // The slots to damage, from an intact copy.
  std::vector<uint64_t> slots;
  {
    auto img = DriverImage::open(src);
    ASSERT_TRUE(img);
    auto& t = (*img)->facet<DriverTables>();
    for (const auto& e : t.dispatch().entries) {
      if (e.implementation != 0) {
        slots.push_back(e.slot);
        break;
      }
    }
    const auto& rows = t.procaddress().rows;
    ASSERT_FALSE(rows.empty());
    slots.push_back(rows[rows.size() / 2].entry_vaddr);
    for (const auto& et : t.export_tables().tables) {
      for (const auto& sl : et.slots) {
        if (sl.kind == cuda::SlotKind::kFunction && slots.size() < 3) slots.push_back(sl.vaddr);
      }
    }
    ASSERT_EQ(slots.size(), 3u);
  }
  std::string m = orig;
  for (uint64_t slot : slots) {
    bool found = false;
    for (uint64_t at = rela->offset; at + 24 <= rela->offset + rela->size; at += 24) {
      uint64_t r_offset = 0;
      std::memcpy(&r_offset, m.data() + at, 8);
      if (r_offset != slot) continue;
      m[at + 23] = '\x7f';  // the addend's top byte
      found = true;
    }
    ASSERT_TRUE(found) << std::hex << slot;
  }
  std::string path = write_temp("names-threads-tables.so", m);
  Both b = build_both(path);
  std::remove(path.c_str());
  EXPECT_EQ(b.threaded_map, b.serial_map);
  EXPECT_EQ(b.threaded_diag, b.serial_diag);
  auto first = [&](std::string_view prefix) {
    for (size_t i = 0; i < b.serial_diag.size(); ++i)
      if (b.serial_diag[i].rfind(prefix, 0) == 0) return i;
    ADD_FAILURE() << "no report starts with " << prefix;
    return b.serial_diag.size();
  };
  size_t dispatch = first("dispatch "), procaddress = first("cuGetProcAddress "),
         exports = first("export table #");
  EXPECT_LT(dispatch, procaddress);
  EXPECT_LT(procaddress, exports);
}

}  // namespace
}  // namespace cudatool::test
