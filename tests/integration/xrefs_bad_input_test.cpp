// Truncated and mutated libraries given to `xrefs` and `index`: errors (exit status 2, the damage
// named on stderr), never a crash, a hang or a sanitizer report. The cut points of the real build
// are fractions of its size; readelf tells which sections a cut damages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "base/bytes.hpp"

#include "frames_helpers.hpp"
#include "harness.hpp"
#include "xrefs_support.hpp"

namespace cudatool::test {
namespace {

void expect_clean_exit(const RunResult& r, const std::string& what) {
  EXPECT_FALSE(r.timed_out) << what;
  EXPECT_EQ(r.signal, 0) << what << ": " << r.err;
  EXPECT_TRUE(r.status >= 0 && r.status <= 2) << what << ": status " << r.status;
  EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << what << ": " << r.err;
}

// Both commands on one damaged copy.
void run_both(const std::string& path, const std::string& what) {
  expect_clean_exit(run({cudatool_bin(), "xrefs", path, "--json", "ioctl"}, 120), what + " xrefs");
  expect_clean_exit(run({cudatool_bin(), "index", path, "-o", path + ".sqlite"}, 120),
                    what + " index");
  std::remove((path + ".sqlite").c_str());
}

std::string fixture() {
  return read_file(fixtures_dir() + "/xrefs/stripped/libxrefs.so");
}

TEST(XrefsBadInput, EveryTruncationOfTheFixture) {
  const std::string bytes = fixture();
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    if (!test_sample(cut / 97)) continue;
    std::string p = write_temp("xrefs-cut.so", bytes.substr(0, cut));
    run_both(p, "fixture cut at " + std::to_string(cut));
  }
}

TEST(XrefsBadInput, MutatedFixture) {
  const std::string bytes = fixture();
  std::mt19937 rng(16);  // fixed: the same copies every run
  for (int i = 0; i < test_rounds(150); ++i) {
    std::string b = bytes;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    std::string p = write_temp("xrefs-mutated.so", b);
    run_both(p, "mutation " + std::to_string(i));
  }
}

// A real build cut anywhere loses its section header table (it is at the end of the file): the
// error names it and says where it should have been.
TEST(XrefsBadInput, TruncatedRealBuild) {
  const std::string lib = driver_lib("550.163.01");
  ASSERT_EQ(access(lib.c_str(), R_OK), 0) << lib << ": run tools/fetch-drivers.sh";
  const std::string bytes = read_file(lib);
  for (double f : {0.05, 0.5, 0.95}) {
    auto cut = static_cast<size_t>(static_cast<double>(bytes.size()) * f);
    std::string p = write_temp("xrefs-real-cut.so", bytes.substr(0, cut));
    for (const auto& r : {run({cudatool_bin(), "xrefs", p, "ioctl"}, 120),
                          run({cudatool_bin(), "index", p, "-o", p + ".sqlite"}, 120)}) {
      expect_clean_exit(r, "cut at " + std::to_string(cut));
      EXPECT_EQ(r.status, 2) << r.err;
      EXPECT_NE(r.err.find("section header table"), std::string::npos) << r.err;
    }
  }
}

// Section headers that point past the end of the file (.text, .rodata, .rela.dyn in turn): the
// section is named (by index) on stderr, exit status 2, and the index is built from the rest.
TEST(XrefsBadInput, SectionsPastTheEndOfTheFile) {
  const std::string lib = driver_lib("550.163.01");
  ASSERT_EQ(access(lib.c_str(), R_OK), 0) << lib << ": run tools/fetch-drivers.sh";
  const std::string bytes = read_file(lib);
  auto secs = readelf_sections(lib);
  const uint64_t shoff = load_le<uint64_t>(reinterpret_cast<const uint8_t*>(bytes.data() + 40));
  for (const char* name : {".text", ".rodata", ".rela.dyn"}) {
    const ReadelfSection* s = find_section(secs, name);
    ASSERT_NE(s, nullptr) << name;
    std::string b = bytes;
    const uint64_t size = bytes.size();
    std::memcpy(b.data() + shoff + static_cast<uint64_t>(s->index) * 64 + 24, &size,
                8);  // sh_offset
    std::string p = write_temp("xrefs-past-end.so", b);
    RunResult r = run({cudatool_bin(), "index", p, "-o", p + ".sqlite"}, 120);
    expect_clean_exit(r, name);
    EXPECT_EQ(r.status, 2) << name << ": " << r.err;
    // ElfImage names the section by index (its name is read later, from .shstrtab).
    EXPECT_NE(r.err.find("section [" + std::to_string(s->index) + "]"), std::string::npos) << r.err;
    // What the other sections hold is still indexed: the PLT and its callers outside .text.
    auto rows = sqlite_rows(p + ".sqlite", "SELECT count(*) FROM functions");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_GT(std::stoull(rows[0][0]), 1000u) << name;
    std::remove((p + ".sqlite").c_str());
  }
}

// A library whose unwind data was wiped (.eh_frame zeroed: no function left, while
// .eh_frame_hdr's search table still lists them) is damage the answer must not hide: xrefs and
// index print what they can and a warning that the function map disagrees, and exit 2 — before,
// both exited 0 and called every call site "from data".
TEST(XrefsBadInput, WipedUnwindDataIsSaid) {
  const std::string path = fixtures_dir() + "/xrefs/stripped/libxrefs.so";
  std::string bytes = read_file(path);
  const ReadelfSection* eh = nullptr;
  auto secs = readelf_sections(path);
  eh = find_section(secs, ".eh_frame");
  ASSERT_NE(eh, nullptr);
  ASSERT_NE(find_section(secs, ".eh_frame_hdr"), nullptr);
  std::memset(bytes.data() + eh->offset, 0, eh->size);
  std::string p = write_temp("xrefs-wiped-eh.so", bytes);
  RunResult good = run({cudatool_bin(), "xrefs", path, "ioctl"}, 120);
  ASSERT_EQ(good.status, 0) << good.err;
  EXPECT_EQ(good.err.find("function map may be damaged"), std::string::npos) << good.err;
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{cudatool_bin(), "xrefs", p, "--json", "ioctl"},
        {cudatool_bin(), "index", p, "-o", p + ".sqlite"}}) {
    RunResult r = run(argv, 120);
    expect_clean_exit(r, argv[1]);
    EXPECT_EQ(r.status, 2) << argv[1] << ": " << r.err;
    EXPECT_NE(r.err.find("function map may be damaged"), std::string::npos) << r.err;
  }
  std::remove((p + ".sqlite").c_str());
}

}  // namespace
}  // namespace cudatool::test
