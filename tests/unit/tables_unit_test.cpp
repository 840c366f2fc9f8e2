// Pure logic under the driver tables: the relocation index (against a std::map), the section
// map's bounded reads, UUID text, the community-name list, the merge of the function names.
#include <elf.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/driver_tables.hpp"
#include "cuda/driver_tables.hpp"
#include "elf/elf_image.hpp"
#include "elf/reloc_index.hpp"
#include "elf/section_map.hpp"

namespace cudatool {
namespace {

template <class T>
void put(std::vector<uint8_t>& b, size_t off, T v) {
  if (b.size() < off + sizeof(T)) b.resize(off + sizeof(T));
  std::memcpy(b.data() + off, &v, sizeof(T));
}

// An ELF64 file with a SHF_ALLOC .rela.dyn holding `relas` ({r_offset, r_info, r_addend}) and an
// allocated .data section [data_addr, data_addr + data.size()).
std::vector<uint8_t> tiny_elf(const std::vector<std::array<uint64_t, 3>>& relas,
                              uint64_t rela_size_extra = 0, uint64_t data_addr = 0x1000,
                              const std::string& data = "hello\0world", bool data_nul = true) {
  std::vector<uint8_t> b(64, 0);
  const char shstr[] = "\0.rela.dyn\0.shstrtab\0.data\0";
  size_t rela_off = 64;
  for (size_t i = 0; i < relas.size(); ++i)
    for (size_t k = 0; k < 3; ++k) put<uint64_t>(b, rela_off + i * 24 + k * 8, relas[i][k]);
  size_t rela_size = relas.size() * 24 + rela_size_extra;
  b.resize(rela_off + rela_size, 0);
  size_t data_off = b.size();
  b.insert(b.end(), data.begin(), data.end());
  if (data_nul && (data.empty() || data.back() != '\0')) b.push_back(0);
  size_t data_size = b.size() - data_off;
  size_t str_off = b.size();
  b.insert(b.end(), shstr, shstr + sizeof shstr);
  while (b.size() % 8) b.push_back(0);
  size_t sh_off = b.size();
  b.resize(sh_off + 4 * 64, 0);
  auto sh = [&](int i, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off,
                uint64_t size, uint64_t entsize) {
    size_t o = sh_off + static_cast<size_t>(i) * 64;
    put<uint32_t>(b, o, name);
    put<uint32_t>(b, o + 4, type);
    put<uint64_t>(b, o + 8, flags);
    put<uint64_t>(b, o + 16, addr);
    put<uint64_t>(b, o + 24, off);
    put<uint64_t>(b, o + 32, size);
    put<uint64_t>(b, o + 56, entsize);
  };
  sh(1, 1, SHT_RELA, SHF_ALLOC, 0x400, rela_off, rela_size, 24);
  sh(2, 11, SHT_STRTAB, 0, 0, str_off, sizeof shstr, 0);
  sh(3, 21, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, data_addr, data_off, data_size, 0);
  std::memcpy(b.data(), ELFMAG, SELFMAG);
  b[EI_CLASS] = ELFCLASS64;
  b[EI_DATA] = ELFDATA2LSB;
  b[EI_VERSION] = EV_CURRENT;
  put<uint16_t>(b, 16, ET_DYN);
  put<uint16_t>(b, 18, EM_X86_64);
  put<uint32_t>(b, 20, EV_CURRENT);
  put<uint64_t>(b, 40, sh_off);
  put<uint16_t>(b, 52, 64);
  put<uint16_t>(b, 58, 64);
  put<uint16_t>(b, 60, 4);
  put<uint16_t>(b, 62, 2);
  return b;
}

TEST(RelocIndex, FindsWhatAMapFinds) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 20; ++round) {
    std::map<uint64_t, uint64_t> expect;
    std::vector<std::array<uint64_t, 3>> relas;
    int n = 1 + static_cast<int>(rng() % 2000);
    // Dense offsets in most rounds, a hostile 64-bit spread in some.
    bool spread = round % 4 == 3;
    for (int i = 0; i < n; ++i) {
      uint64_t where = spread ? rng() : 0x200000 + (rng() % 50000) * 8;
      uint64_t add = rng() % 0x1000000;
      if (expect.count(where)) continue;
      expect[where] = add;
      relas.push_back({where, R_X86_64_RELATIVE, add});
    }
    std::shuffle(relas.begin(), relas.end(), rng);
    auto bytes = tiny_elf(relas);
    auto elf = elf::ElfImage::parse(ByteView(bytes.data(), bytes.size()));
    ASSERT_TRUE(elf) << elf.error().message();
    Diagnostics diag;
    auto ix = elf::RelocIndex::build(*elf, {}, &diag);
    EXPECT_TRUE(diag.empty());
    EXPECT_EQ(ix.walked(), relas.size());
    EXPECT_EQ(ix.all().size(), expect.size());
    for (const auto& [w, a] : expect) {
      const auto* r = ix.find(w);
      ASSERT_NE(r, nullptr) << w;
      EXPECT_EQ(r->target, a);
      if (w + 1 != 0 && !expect.count(w + 1)) {
        EXPECT_EQ(ix.find(w + 1), nullptr);
      }
    }
    // range() agrees with the map for a few windows.
    for (int k = 0; k < 20; ++k) {
      uint64_t lo = spread ? rng() : 0x200000 + (rng() % 50000) * 8;
      uint64_t hi = lo + (spread ? rng() % (uint64_t{1} << 62) : (rng() % 4000));
      if (hi < lo) continue;
      auto it = expect.lower_bound(lo), end = expect.lower_bound(hi);
      EXPECT_EQ(ix.range(lo, hi).size(), static_cast<size_t>(std::distance(it, end)));
    }
  }
}

TEST(RelocIndex, DuplicatesAndRaggedTables) {
  auto bytes = tiny_elf({{0x2000, R_X86_64_RELATIVE, 1},
                         {0x2000, R_X86_64_RELATIVE, 2},
                         {0x2008, R_X86_64_TPOFF64, 3},
                         {0x2010, R_X86_64_64, 4}},
                        /*rela_size_extra=*/5);
  auto elf = elf::ElfImage::parse(ByteView(bytes.data(), bytes.size()));
  ASSERT_TRUE(elf);
  Diagnostics diag;
  auto ix = elf::RelocIndex::build(*elf, {}, &diag);
  EXPECT_EQ(ix.walked(), 4u);
  EXPECT_EQ(ix.all().size(), 1u);  // TPOFF64 and an unresolvable R_X86_64_64 are left out
  EXPECT_EQ(ix.unresolved(), 2u);
  ASSERT_NE(ix.find(0x2000), nullptr);
  EXPECT_EQ(ix.find(0x2000)->target, 2u);  // the last relocation of a slot wins, as in ld.so
  EXPECT_EQ(diag.count(), 2u);             // ragged size + the duplicate
  EXPECT_EQ(ix.find(0), nullptr);
  EXPECT_TRUE(ix.range(5, 5).empty());
}

// Slots relocated more than once, against a map where the later relocation overwrites: in
// address order (ld's), shuffled, and in order up to a point and then not (the order the index
// checks as it reads). The report counts the extra relocations and names the lowest such slot.
TEST(RelocIndex, DuplicateSlotsKeepTheLastRelocationInEveryOrder) {
  std::mt19937_64 rng(20261205);
  for (int round = 0; round < 30; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::array<uint64_t, 3>> relas;
    int n = 2 + static_cast<int>(rng() % 1500);
    for (int i = 0; i < n; ++i) {
      uint64_t where = 0x200000 + (rng() % 2000) * 8;
      relas.push_back({where, R_X86_64_RELATIVE, rng() % 0x1000000});
    }
    auto by_where = [](const auto& a, const auto& b) { return a[0] < b[0]; };
    if (round % 3 == 0) std::stable_sort(relas.begin(), relas.end(), by_where);
    if (round % 3 == 1) std::stable_sort(relas.begin(), relas.begin() + n / 2, by_where);
    std::map<uint64_t, uint64_t> expect;
    std::map<uint64_t, int> times;
    for (const auto& r : relas) {
      expect[r[0]] = r[2];
      ++times[r[0]];
    }
    uint64_t extra = relas.size() - expect.size();
    uint64_t lowest = 0;
    for (const auto& [w, k] : times) {
      if (k > 1) {
        lowest = w;
        break;
      }
    }
    auto bytes = tiny_elf(relas);
    auto elf = elf::ElfImage::parse(ByteView(bytes.data(), bytes.size()));
    ASSERT_TRUE(elf);
    Diagnostics diag;
    auto ix = elf::RelocIndex::build(*elf, {}, &diag);
    ASSERT_EQ(ix.all().size(), expect.size());
    size_t i = 0;
    for (const auto& [w, a] : expect) {
      EXPECT_EQ(ix.all()[i].where, w);
      EXPECT_EQ(ix.all()[i].target, a) << "the last relocation of a slot wins";
      ++i;
    }
    if (extra == 0) {
      EXPECT_TRUE(diag.empty());
      continue;
    }
    ASSERT_EQ(diag.items().size(), 1u);
    std::string msg = diag.items()[0].message();
    EXPECT_NE(msg.find(std::to_string(extra) + " slots are relocated more than once"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(fmt::format("first at vaddr {:#x})", lowest)), std::string::npos) << msg;
  }
}

TEST(SectionMap, ReadsStayInsideTheirSection) {
  auto bytes = tiny_elf({}, 0, 0x1000, std::string("abc\0xyz", 7), /*data_nul=*/false);
  auto elf = elf::ElfImage::parse(ByteView(bytes.data(), bytes.size()));
  ASSERT_TRUE(elf);
  elf::SectionMap sm(*elf);
  EXPECT_EQ(sm.cstring(0x1000), "abc");
  EXPECT_FALSE(sm.cstring(0x1004));  // "xyz" has no NUL before the section ends
  EXPECT_FALSE(sm.u64(0x1000));      // 7 bytes: no room for 8
  EXPECT_TRUE(sm.bytes(0x1000, 7));
  EXPECT_FALSE(sm.bytes(0x1001, 7));
  EXPECT_EQ(sm.at(0x0fff), nullptr);
  EXPECT_EQ(sm.at(0x1007), nullptr);
  EXPECT_EQ(sm.offset_of(0x1002).value_or(0), sm.at(0x1000)->bytes.base() + 2);
  EXPECT_FALSE(sm.cstring(UINT64_MAX));
}

TEST(Uuid, TextAndKnownNames) {
  auto u = cuda::parse_uuid("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
  ASSERT_TRUE(u);
  EXPECT_EQ((*u)[0], 0x6b);
  EXPECT_EQ((*u)[15], 0xf9);
  EXPECT_EQ(cuda::format_uuid(*u), "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
  EXPECT_EQ(cuda::parse_uuid("{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}"), u);
  EXPECT_FALSE(cuda::parse_uuid("6bd5fb6c"));
  EXPECT_FALSE(cuda::parse_uuid("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9aa"));
  EXPECT_FALSE(cuda::parse_uuid("zzd5fb6c-5bf4-e74a-8987-d93912fd9df9"));
  const auto* k = cuda::find_known_export_table(*u);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "CUDART_INTERFACE");
  // Every listed UUID prints back as itself and is listed once; slot indices ascend.
  std::set<std::string> seen;
  for (const auto& t : cuda::known_export_tables()) {
    std::string s = cuda::format_uuid(t.uuid);
    EXPECT_EQ(cuda::parse_uuid(s), t.uuid);
    EXPECT_TRUE(seen.insert(s).second) << s;
    for (size_t i = 1; i < t.slots.size(); ++i) EXPECT_LT(t.slots[i - 1].index, t.slots[i].index);
  }
}

// DriverTables::merge_in_address_order against a stable sort of the parts put end to end: random
// parts with many shared addresses, names repeated within and across parts, and empty parts.
TEST(DriverTablesMerge, IsAStableSortOfThePartsEndToEndWithoutRepeats) {
  using Named = DriverTables::NamedFunction;
  using Kind = Named::Kind;
  std::mt19937_64 rng(20261205);
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  for (int round = 0; round < 300; ++round) {
    std::vector<Named> parts[3];
    for (int k = 0; k < 3; ++k) {
      size_t n = round % 7 == k ? 0 : rng() % 40;  // now and then an empty part
      for (size_t i = 0; i < n; ++i)
        parts[k].push_back({rng() % 16, names[rng() % names.size()], "", static_cast<Kind>(k)});
      std::stable_sort(parts[k].begin(), parts[k].end(),
                       [](const Named& a, const Named& b) { return a.address < b.address; });
    }
    std::vector<Named> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    std::stable_sort(all.begin(), all.end(),
                     [](const Named& a, const Named& b) { return a.address < b.address; });
    std::vector<Named> want;
    for (const auto& n : all) {
      if (!want.empty() && want.back().address == n.address && want.back().name == n.name) continue;
      want.push_back(n);
    }
    auto got = DriverTables::merge_in_address_order(parts);
    ASSERT_EQ(got.size(), want.size()) << round;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].address, want[i].address) << round << " " << i;
      ASSERT_EQ(got[i].name, want[i].name) << round << " " << i;
      ASSERT_EQ(got[i].kind, want[i].kind) << round << " " << i;
    }
  }
  EXPECT_TRUE(DriverTables::merge_in_address_order({}).empty());
}

// find_export_tables() picks, among the runs of {uuid, table} pairs, the one with the most UUIDs
// the community named, then the longest, then the first; a run without a named UUID only when it
// has 8 or more pairs, three in four of them RFC 4122 UUIDs. Synthetic files: one .data section
// holding the UUIDs (0x1000), one-word tables (0x1800) and the pair arrays (0x2000 on).
class ExportTableRuns : public ::testing::Test {
 protected:
  static constexpr uint64_t kBase = 0x1000, kTables = 0x1800, kPairs = 0x2000;
  std::string data_ = std::string(0x3000, '\0');
  std::vector<std::array<uint64_t, 3>> relas_;
  int uuids_ = 0, tables_ = 0;
  std::mt19937_64 rng_{7};

  uint64_t uuid(bool rfc, const cuda::Uuid* known = nullptr) {
    uint64_t at = kBase + 16 * static_cast<uint64_t>(uuids_++);
    cuda::Uuid u{};
    if (known) {
      u = *known;
    } else {
      for (auto& b : u) b = static_cast<uint8_t>(rng_());
      u[0] = 0x90;  // not text
      u[8] = static_cast<uint8_t>(rfc ? (u[8] & 0x3f) | 0x80 : 0x01);
    }
    std::memcpy(data_.data() + (at - 0x1000), u.data(), 16);
    return at;
  }
  uint64_t table() {
    uint64_t at = kTables + 16 * static_cast<uint64_t>(tables_++);
    uint64_t size_word = 8;  // the size word alone
    std::memcpy(data_.data() + (at - 0x1000), &size_word, 8);
    return at;
  }
  // A run of `n` pairs at `at`, `known` of them (the first ones) CUDART_INTERFACE's UUID.
  void run(uint64_t at, int n, bool rfc, int known = 0) {
    auto cudart = cuda::parse_uuid("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9");
    for (int i = 0; i < n; ++i) {
      uint64_t p = at + 16 * static_cast<uint64_t>(i);
      relas_.push_back({p, R_X86_64_RELATIVE, uuid(rfc, i < known ? &*cudart : nullptr)});
      relas_.push_back({p + 8, R_X86_64_RELATIVE, table()});
    }
  }
  cuda::ExportTables find() {
    auto bytes = tiny_elf(relas_, 0, kBase, data_, /*data_nul=*/false);
    auto elf = elf::ElfImage::parse(ByteView(bytes.data(), bytes.size()));
    if (!elf) {
      ADD_FAILURE() << elf.error().message();
      return {};
    }
    Diagnostics diag;
    auto ix = elf::RelocIndex::build(*elf, {}, &diag);
    elf::SectionMap sm(*elf);
    return cuda::find_export_tables({&sm, &ix, nullptr, &diag});
  }
};

TEST_F(ExportTableRuns, TheFirstOfTwoEqualUnnamedRuns) {
  run(kPairs, 9, true);
  run(kPairs + 0x400, 9, true);
  auto et = find();
  ASSERT_TRUE(et.found) << et.evidence;
  EXPECT_EQ(et.vaddr, kPairs);
  EXPECT_EQ(et.tables.size(), 9u);
  EXPECT_EQ(et.known_count, 0u);
}

TEST_F(ExportTableRuns, ALongerUnnamedRunWins) {
  run(kPairs, 9, true);
  run(kPairs + 0x400, 10, true);
  auto et = find();
  ASSERT_TRUE(et.found) << et.evidence;
  EXPECT_EQ(et.vaddr, kPairs + 0x400);
  EXPECT_EQ(et.tables.size(), 10u);
}

TEST_F(ExportTableRuns, ANamedUuidOutweighsLength) {
  run(kPairs, 12, true);
  run(kPairs + 0x400, 1, false, 1);
  run(kPairs + 0x600, 2, false, 1);
  run(kPairs + 0x800, 12, true);
  auto et = find();
  ASSERT_TRUE(et.found) << et.evidence;
  EXPECT_EQ(et.vaddr, kPairs + 0x600);  // one named UUID each: the longer of the two
  EXPECT_EQ(et.known_count, 1u);
  ASSERT_EQ(et.tables.size(), 2u);
  ASSERT_NE(et.tables[0].known, nullptr);
  EXPECT_EQ(et.tables[0].known->name, "CUDART_INTERFACE");
}

// Short runs, or runs of UUIDs without the RFC 4122 variant: none is taken, and the evidence
// counts every run seen. Each run of 2 pairs is two runs: its pairs (in one 8-byte phase), and
// the {table, next uuid} pair between them (in the other).
TEST_F(ExportTableRuns, NoPlausibleRunIsNotFound) {
  run(kPairs, 2, true);
  run(kPairs + 0x400, 2, true);
  run(kPairs + 0x800, 9, false);
  auto et = find();
  EXPECT_FALSE(et.found);
  EXPECT_TRUE(et.tables.empty());
  EXPECT_NE(et.evidence.find("not found"), std::string::npos) << et.evidence;
  EXPECT_NE(et.evidence.find("(6 runs seen)"), std::string::npos) << et.evidence;
}

}  // namespace
}  // namespace cudatool
