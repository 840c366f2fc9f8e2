// Damaged unwind tables: each broken record is reported on its own line, the rest of the map is
// still built (its size computed from readelf's view of the intact file), nothing crashes or
// hangs. Search-table disagreements are findings (exit status 1), damage is bad input (2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <set>

#include "base/bytes.hpp"
#include "frames_helpers.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

using nlohmann::json;

// One real build (the 550 one when present) and what readelf says about it.
struct Subject {
  std::string path;
  std::string bytes;
  ReadelfFrames frames;
  uint64_t eh_off = 0, eh_size = 0, eh_shdr = 0;  // file offset, size, offset of its header
  uint64_t hdr_off = 0;                           // .eh_frame_hdr file offset
};

const Subject& subject() {
  static Subject s = [] {
    Subject x;
    auto builds = driver_builds();
    EXPECT_FALSE(builds.empty());
    x.path = builds.front().lib_path;
    for (const auto& b : builds)
      if (b.version.rfind("550.", 0) == 0) x.path = b.lib_path;
    x.bytes = read_file(x.path);
    EXPECT_GT(x.bytes.size(), 1000u) << x.path << " is missing: run tools/fetch-drivers.sh";
    x.frames = readelf_frames(x.path);
    auto secs = readelf_sections(x.path);
    const ReadelfSection* eh = find_section(secs, ".eh_frame");
    const ReadelfSection* hdr = find_section(secs, ".eh_frame_hdr");
    EXPECT_TRUE(eh != nullptr && hdr != nullptr);
    if (eh == nullptr || hdr == nullptr || x.bytes.size() < 64) return x;
    x.eh_off = eh->offset;
    x.eh_size = eh->size;
    x.hdr_off = hdr->offset;
    uint64_t shoff = load_le<uint64_t>(reinterpret_cast<const uint8_t*>(x.bytes.data() + 40));
    x.eh_shdr = shoff + static_cast<uint64_t>(eh->index) * 64;
    return x;
  }();
  return s;
}

template <class T>
void put(std::string& b, uint64_t off, T v) {
  ASSERT_LE(off + sizeof v, b.size());
  std::memcpy(b.data() + off, &v, sizeof v);
}
uint32_t u32(const std::string& b, uint64_t off) {
  return load_le<uint32_t>(reinterpret_cast<const uint8_t*>(b.data() + off));
}

JsonRun functions_on(const std::string& name, const std::string& bytes,
                     const std::string& cmd = "functions") {
  std::string p = write_temp(name, bytes);
  if (cmd == "symbolize") return cudatool_json_run({cmd, "--json", p, "-o", p + ".sym"}, 60);
  return cudatool_json_run({cmd, "--json", p}, 60);
}

void expect_no_crash(const JsonRun& r) {
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 0) << r.err;
  EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
}

// Damage: exit 2, the reason on stderr, the map holds `count` functions, and every FDE readelf
// lists (except those in `lost`) is still there.
void expect_damage(const JsonRun& r, const std::string& mention, size_t count,
                   const std::set<uint64_t>& lost) {
  expect_no_crash(r);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
  ASSERT_TRUE(r.json.is_object()) << r.err;
  EXPECT_EQ(r.json["count"].get<size_t>(), count);
  std::set<uint64_t> have;
  for (const auto& f : r.json["functions"]) have.insert(hex_field(f["fde"]));
  for (const auto& f : subject().frames.fdes) {
    if (lost.count(f.offset) == 0) {
      EXPECT_EQ(have.count(f.offset), 1u) << "FDE " << f.offset;
    }
  }
}

TEST(FunctionsBadInput, RecordLengthPastTheEndResumesAtTheSearchTable) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  ASSERT_GT(n, 100u);
  const ReadelfFde& k = s.frames.fdes[n / 2];
  std::string b = s.bytes;
  put<uint32_t>(b, s.eh_off + k.offset, 0x7ffffff0);
  JsonRun r = functions_on("len-past-end", b);
  expect_damage(r, "runs past the end of the section", n - 1, {k.offset});
  // The search table still lists it: a disagreement naming that FDE's offset.
  EXPECT_FALSE(r.json["eh_frame_hdr"]["agrees"].get<bool>());
  EXPECT_NE(r.json["eh_frame_hdr"].dump().find(fmt_hex(k.offset)), std::string::npos);
  EXPECT_GT(r.json["eh_frame"]["skipped_bytes"].get<uint64_t>(), 0u);
}

TEST(FunctionsBadInput, ReservedLengthValue) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  const ReadelfFde& k = s.frames.fdes[n / 3];
  std::string b = s.bytes;
  put<uint32_t>(b, s.eh_off + k.offset, 0xfffffff4);
  expect_damage(functions_on("reserved-length", b), "reserved value", n - 1, {k.offset});
}

TEST(FunctionsBadInput, CiePointerOutOfRange) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  const ReadelfFde& k = s.frames.fdes[n / 4];
  std::string b = s.bytes;
  // Points 4 KiB before the section's first byte.
  put<uint32_t>(b, s.eh_off + k.offset + 4, static_cast<uint32_t>(k.offset + 4 + 0x1000));
  expect_damage(functions_on("cie-before-start", b), "points before the start of the section",
                n - 1, {k.offset});
  // Points at another FDE instead of a CIE.
  const ReadelfFde& prev = s.frames.fdes[n / 4 - 1];
  b = s.bytes;
  put<uint32_t>(b, s.eh_off + k.offset + 4, static_cast<uint32_t>(k.offset + 4 - prev.offset));
  expect_damage(functions_on("cie-is-fde", b), "not the start of a CIE", n - 1, {k.offset});
}

TEST(FunctionsBadInput, UnknownFdeEncodingDamagesOneCie) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  ASSERT_GE(s.frames.cies.size(), 2u);
  const uint64_t cie = s.frames.cies.back();
  // The 'R' byte of a "zR" version-1 CIE: length, id, version, "zR\0", code alignment (ULEB),
  // data alignment (SLEB), return register (byte), augmentation length (ULEB), R.
  uint64_t p = s.eh_off + cie + 9;
  ASSERT_EQ(s.bytes.substr(p, 3), std::string("zR\0", 3));
  p += 3;
  for (int field = 0; field < 2; ++field)
    while (static_cast<uint8_t>(s.bytes[p++]) & 0x80) {
    }
  p += 1;                                              // return address register
  while (static_cast<uint8_t>(s.bytes[p++]) & 0x80) {  // augmentation length
  }
  ASSERT_EQ(static_cast<uint8_t>(s.bytes[p]), 0x1b) << "not sdata4|pcrel: layout changed?";
  std::string b = s.bytes;
  b[p] = 0x0e;  // format 0x0e is not defined
  std::set<uint64_t> lost;
  for (const auto& f : s.frames.fdes)
    if (f.cie == cie) lost.insert(f.offset);
  ASSERT_FALSE(lost.empty());
  JsonRun r = functions_on("unknown-encoding", b);
  expect_damage(r, "0x0e?", n - lost.size(), lost);
  // One report per FDE of that CIE, plus the CIE itself (up to the kept maximum).
  size_t fde_reports = 0;
  for (const auto& d : r.json["diagnostics"])
    if (d.get<std::string>().find(fmt_hex(cie)) != std::string::npos) ++fde_reports;
  EXPECT_GE(fde_reports, std::min<size_t>(lost.size(), 999));
}

TEST(FunctionsBadInput, ZeroTerminatorInTheMiddle) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  const ReadelfFde& k = s.frames.fdes[n / 2 + 7];
  std::string b = s.bytes;
  uint32_t len = u32(b, s.eh_off + k.offset);
  ASSERT_EQ((4 + len) % 4, 0u);
  std::memset(b.data() + s.eh_off + k.offset, 0, 4 + len);  // a terminator and zero padding
  JsonRun r = functions_on("zero-in-middle", b);
  expect_damage(r, "zero terminator", n - 1, {k.offset});
  EXPECT_NE(r.err.find("FDEs follow it"), std::string::npos) << r.err;
  EXPECT_EQ(r.json["eh_frame"]["zero_terminators"].get<uint64_t>(), s.frames.terminators + 1);
}

TEST(FunctionsBadInput, SectionCutInsideARecord) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  std::string b = s.bytes;
  put<uint64_t>(b, s.eh_shdr + 32, s.frames.fdes[n - 3].offset + 6);  // sh_size
  std::set<uint64_t> lost{s.frames.fdes[n - 3].offset, s.frames.fdes[n - 2].offset,
                          s.frames.fdes[n - 1].offset};
  expect_damage(functions_on("cut-section", b), "runs past the end of the section", n - 3, lost);
}

TEST(FunctionsBadInput, SearchTableDisagreementsAreFindings) {
  const Subject& s = subject();
  const size_t n = s.frames.fdes.size();
  // .eh_frame_hdr: version, 3 encodings, eh_frame_ptr (4), fde_count (4), then 8-byte entries
  // (sdata4 datarel, as eu-readelf -e shows for every build).
  ASSERT_EQ(static_cast<uint8_t>(s.bytes[s.hdr_off + 3]), 0x3b);
  std::string b = s.bytes;
  const uint64_t entry = s.hdr_off + 12 + 8 * (n / 2);
  put<uint32_t>(b, entry, u32(b, entry) + 1);  // initial location off by one
  JsonRun r = functions_on("hdr-off-by-one", b);
  expect_no_crash(r);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.json["count"].get<size_t>(), n);
  EXPECT_EQ(r.json["eh_frame_hdr"]["disagreement_count"].get<uint64_t>(), 1u);
  EXPECT_NE(r.json["eh_frame_hdr"]["disagreements"][0].get<std::string>().find("initial_location"),
            std::string::npos);
  // Two entries swapped: unsorted, which a binary search cannot use.
  b = s.bytes;
  const uint64_t e1 = s.hdr_off + 12 + 8 * 10, e2 = e1 + 8;
  std::string tmp = b.substr(e1, 8);
  std::memcpy(b.data() + e1, b.data() + e2, 8);
  std::memcpy(b.data() + e2, tmp.data(), 8);
  r = functions_on("hdr-unsorted", b);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.json["eh_frame_hdr"].dump().find("not sorted"), std::string::npos);
  RunResult text = run({cudatool_bin(), "functions", write_temp("hdr-unsorted", b)});
  EXPECT_NE(text.out.find("DISAGREES"), std::string::npos);
}

TEST(FunctionsBadInput, GarbageNeverCrashes) {
  const Subject& s = subject();
  std::mt19937_64 rng(31337);
  for (int round = 0; round < 6; ++round) {
    std::string b = s.bytes;
    if (round == 0) {
      std::memset(b.data() + s.eh_off, 0, s.eh_size);  // all terminators
    } else if (round == 1) {
      std::memset(b.data() + s.eh_off, 0xff, s.eh_size);  // all 64-bit escapes
    } else {
      for (uint64_t i = 0; i < s.eh_size; ++i)
        if (round == 2 || rng() % 64 == 0) b[s.eh_off + i] = static_cast<char>(rng());
    }
    for (const char* cmd : {"functions", "symbolize"}) {
      SCOPED_TRACE(std::string(cmd) + " round " + std::to_string(round));
      JsonRun r = functions_on("garbage", b, cmd);
      expect_no_crash(r);
      // `functions` always finds something wrong (damage, or a table that disagrees);
      // `symbolize` only reports damage.
      EXPECT_TRUE(r.status == 1 || r.status == 2 || (r.status == 0 && cmd[0] == 's'))
          << r.status << r.err;
    }
  }
}

// Random mutations of small libraries (the fixtures) through every new command.
TEST(FunctionsBadInput, MutatedFixturesNeverCrash) {
  std::vector<std::string> libs = {fixtures_dir() + "/libcuda_fixture.so.999.88.77",
                                   fixtures_dir() + "/symbolize/stripped/libcrashy.so"};
  std::mt19937_64 rng(20261129);
  for (const auto& lib : libs) {
    std::string orig = read_file(lib);
    ASSERT_GT(orig.size(), 1000u) << lib;
    auto secs = readelf_sections(lib);
    const ReadelfSection* eh = find_section(secs, ".eh_frame");
    ASSERT_NE(eh, nullptr) << lib;
    for (int i = 0; i < test_rounds(60); ++i) {
      std::string m = orig;
      int flips = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < flips; ++k) {
        uint64_t at = (k % 3 == 0) ? rng() % std::min<uint64_t>(m.size(), 0x400)
                                   : eh->offset + rng() % eh->size;
        m[at] = static_cast<char>(rng());
      }
      for (const char* cmd : {"functions", "symbolize", "addr"}) {
        SCOPED_TRACE(lib + " " + cmd + " mutation " + std::to_string(i));
        std::string p = write_temp("mut", m);
        RunResult r =
            std::string(cmd) == "addr" ? run({cudatool_bin(), cmd, p, "0x1000", "0x2000"}, 30)
            : std::string(cmd) == "symbolize" ? run({cudatool_bin(), cmd, p, "-o", p + ".sym"}, 30)
                                              : run({cudatool_bin(), cmd, "--json", p}, 30);
        EXPECT_FALSE(r.timed_out);
        EXPECT_EQ(r.signal, 0) << r.err;
        EXPECT_TRUE(r.status >= 0 && r.status <= 2) << r.status << r.err;
        EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << r.err;
        EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
      }
    }
  }
}

TEST(FunctionsBadInput, UsageErrors) {
  const Subject& s = subject();
  EXPECT_EQ(run({cudatool_bin(), "symbolize", s.path}).status, 2);  // no -o / --debug-dir
  RunResult r = run({cudatool_bin(), "symbolize", s.path, "-o", "/nonexistent/dir/x.sym"});
  EXPECT_EQ(r.status, 2);
  // Said before the library is read (usable_output): the path, and why.
  EXPECT_NE(r.err.find("-o /nonexistent/dir/x.sym: cannot write: no directory"), std::string::npos)
      << r.err;
  EXPECT_EQ(run({cudatool_bin(), "functions", "/nonexistent"}).status, 2);
  EXPECT_EQ(run({cudatool_bin(), "addr", s.path}).status, 2);  // no ADDR
}

}  // namespace
}  // namespace cudatool::test
