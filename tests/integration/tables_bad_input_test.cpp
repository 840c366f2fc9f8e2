// Damaged driver tables: copies of a real build with one table broken the way a bad file or a
// hostile one would break it. Each must be reported (stderr, "diagnostics", exit status 2) and
// never crash or hang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "tables_oracle.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// A copy of one real build (550 when cached, else the first) that a test may patch.
class DamagedTables : public ::testing::Test {
 protected:
  void SetUp() override {
    auto builds = driver_builds();
    ASSERT_FALSE(builds.empty());
    src_ = builds.front().lib_path;
    for (const auto& b : builds)
      if (b.version.rfind("550.", 0) == 0) src_ = b.lib_path;
    ASSERT_EQ(access(src_.c_str(), R_OK), 0)
        << src_ << " is missing: run tools/fetch-drivers.sh (the test command does)";
    data_ = read_file(src_);
    sections_ = readelf_sections(src_);
    RunResult r = run({cudatool_bin(), "tables", "--json", src_});
    ASSERT_EQ(r.status, 0) << r.err;
    clean_ = json::parse(r.out);
  }
  const ReadelfSection& section(const std::string& name) {
    for (const auto& s : sections_)
      if (s.name == name) return s;
    throw std::runtime_error("no section " + name);
  }
  uint64_t file_offset(uint64_t vaddr) {
    for (const auto& s : sections_)
      if (!s.nobits() && s.addr != 0 && vaddr >= s.addr && vaddr - s.addr < s.size)
        return s.offset + (vaddr - s.addr);
    throw std::runtime_error("vaddr not in the file");
  }
  void put_u64(uint64_t file_off, uint64_t v) {
    ASSERT_LE(file_off + 8, data_.size());
    std::memcpy(data_.data() + file_off, &v, 8);
  }
  // The file offset of the r_addend of the .rela.dyn entry that relocates `where`.
  uint64_t addend_offset(uint64_t where) {
    const auto& rela = section(".rela.dyn");
    for (uint64_t o = rela.offset; o + 24 <= rela.offset + rela.size; o += 24) {
      uint64_t r_offset = 0;
      std::memcpy(&r_offset, data_.data() + o, 8);
      if (r_offset == where) return o + 16;
    }
    throw std::runtime_error("no relocation for the slot");
  }
  // Runs `cudatool tables --json` on the patched copy.
  RunResult run_damaged(const std::string& name, json* out) {
    std::string path = write_temp(name, data_);
    RunResult r = run({cudatool_bin(), "tables", "--json", path}, 120);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.signal, 0) << r.err;
    if (out != nullptr && !r.out.empty()) *out = json::parse(r.out);
    std::remove(path.c_str());
    return r;
  }

  std::string src_, data_;
  std::vector<ReadelfSection> sections_;
  json clean_;
};

TEST_F(DamagedTables, SizeWordRunningOffItsSection) {
  // The sized export table nearest the end of its section claims to reach past it.
  const json* last = nullptr;
  for (const auto& t : clean_["exporttables"]["tables"]) {
    if (t["declared_size"].is_null() || t["section"] != ".data.rel.ro") continue;
    if (last == nullptr || json_hex(t["address"]) > json_hex((*last)["address"])) last = &t;
  }
  ASSERT_NE(last, nullptr);
  const auto& sec = section(".data.rel.ro");
  uint64_t addr = json_hex((*last)["address"]);
  uint64_t room = sec.addr + sec.size - addr;
  uint64_t claim = (room + 0x100) & ~uint64_t{7};
  ASSERT_LE(claim, 0x10000u) << "the table is too far from the section end for this test";
  put_u64(file_offset(addr), claim);
  json j;
  RunResult r = run_damaged("size-off-section.so", &j);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("runs off section .data.rel.ro"), std::string::npos) << r.err;
  bool seen = false;
  for (const auto& t : j["exporttables"]["tables"]) {
    if (t["uuid"] != (*last)["uuid"]) continue;
    seen = true;
    EXPECT_TRUE(t["truncated"].get<bool>());
    EXPECT_EQ(t["slot_count"].get<uint64_t>(), room / 8);
  }
  EXPECT_TRUE(seen);
  EXPECT_FALSE(j["diagnostics"].empty());
}

TEST_F(DamagedTables, RelocationPointingNowhere) {
  // An export-table slot whose relocation now points far outside the image.
  const json* slot = nullptr;
  std::string uuid;
  for (const auto& t : clean_["exporttables"]["tables"]) {
    for (const auto& s : t["slots"])
      if (s["kind"] == "function") {
        slot = &s;
        uuid = t["uuid"];
        break;
      }
    if (slot != nullptr) break;
  }
  ASSERT_NE(slot, nullptr);
  put_u64(addend_offset(json_hex((*slot)["address"])), 0x7fff00000000ull);
  json j;
  RunResult r = run_damaged("reloc-nowhere.so", &j);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("outside every section"), std::string::npos) << r.err;
  for (const auto& t : j["exporttables"]["tables"]) {
    if (t["uuid"] == uuid) {
      EXPECT_EQ(t["slots"][(*slot)["index"].get<size_t>()]["kind"], "nowhere");
    }
  }
}

TEST_F(DamagedTables, DispatchCycle) {
  // cuMemAlloc_v2's slot sends it to cuMemFree_v2, whose slot sends it back.
  std::map<std::string, json> by_name;
  for (const auto& e : clean_["dispatch"]["entries"]) by_name[e["export"]] = e;
  ASSERT_TRUE(by_name.count("cuMemAlloc_v2") && by_name.count("cuMemFree_v2"));
  const auto& a = by_name["cuMemAlloc_v2"];
  const auto& b = by_name["cuMemFree_v2"];
  put_u64(addend_offset(json_hex(a["slot"])), json_hex(b["wrapper"]));
  put_u64(addend_offset(json_hex(b["slot"])), json_hex(a["wrapper"]));
  json j;
  RunResult r = run_damaged("dispatch-cycle.so", &j);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("dispatch cycle"), std::string::npos) << r.err;
  for (const auto& e : j["dispatch"]["entries"]) {
    if (e["export"] == "cuMemAlloc_v2" || e["export"] == "cuMemFree_v2") {
      EXPECT_TRUE(e["implementation"].is_null()) << e;
      EXPECT_NE(e["note"].get<std::string>().find("cycle"), std::string::npos) << e;
    }
  }
}

TEST_F(DamagedTables, ProcAddressListRunningOffItsSection) {
  // A record's shared list moved to the last 16 bytes of .data.rel.ro and said to hold 4.
  const json* rec = nullptr;
  for (const auto& r : clean_["procaddress"]["records"])
    if (r["legacy_list"] == r["per_thread_list"]) rec = &r;
  ASSERT_NE(rec, nullptr);
  const auto& sec = section(".data.rel.ro");
  uint64_t at = json_hex((*rec)["address"]);
  uint64_t tail = sec.addr + sec.size - 16;
  put_u64(addend_offset(at + 8), tail);
  put_u64(addend_offset(at + 16), tail);
  put_u64(file_offset(at + 24), (uint64_t{4} << 32) | 4);
  json j;
  RunResult r = run_damaged("list-off-section.so", &j);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("run off section .data.rel.ro"), std::string::npos) << r.err;
  EXPECT_TRUE(j["procaddress"]["found"].get<bool>());
}

TEST_F(DamagedTables, RelocationTableCutShort) {
  // .rela.dyn's size no longer a multiple of 24 and a run of entries zeroed.
  const auto& rela = section(".rela.dyn");
  std::memset(data_.data() + rela.offset + rela.size / 2, 0, 24 * 1000);
  json j;
  RunResult r = run_damaged("rela-zeroed.so", &j);
  EXPECT_LE(r.status, 2);
  EXPECT_FALSE(r.out.empty());
}

TEST_F(DamagedTables, TruncatedAndForeignFiles) {
  std::string cut = write_temp("truncated.so", data_.substr(0, 4 << 20));
  RunResult r = run({cudatool_bin(), "tables", cut});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A library with none of the tables: found nothing, said so, exit 1.
  RunResult ls = run({cudatool_bin(), "tables", "--json", "/bin/ls"});
  EXPECT_EQ(ls.status, 1) << ls.err;
  json j = json::parse(ls.out);
  EXPECT_FALSE(j["procaddress"]["found"].get<bool>());
  EXPECT_FALSE(j["exporttables"]["found"].get<bool>());
  EXPECT_FALSE(j["errors"]["found"].get<bool>());
  EXPECT_TRUE(j["diagnostics"].empty()) << j["diagnostics"];
}

}  // namespace
}  // namespace cudatool::test
