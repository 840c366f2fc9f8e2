// Bad input gets one clear line on stderr (structure, offset, reason), exit status 2, and never
// a crash, a hang or a huge allocation.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "base/bytes.hpp"
#include "harness.hpp"

namespace cudatool::test {
namespace {

std::string fixture_bytes() {
  return read_file(fixtures_dir() + "/libcuda_fixture.so.999.88.77");
}

struct Outcome {
  RunResult r;
  std::string name;
};

Outcome run_info(const std::string& name, const std::string& bytes,
                 const std::string& cmd = "info") {
  std::string p = write_temp(name, bytes);
  return {run({cudatool_bin(), cmd, p}, 30), name};
}

void expect_clean_failure(const Outcome& o, const std::string& must_mention = "") {
  SCOPED_TRACE(o.name);
  EXPECT_FALSE(o.r.timed_out);
  EXPECT_EQ(o.r.signal, 0) << o.r.err;
  EXPECT_EQ(o.r.status, 2) << o.r.err;
  EXPECT_EQ(o.r.err.find("Sanitizer"), std::string::npos) << o.r.err;
  EXPECT_EQ(o.r.err.find("runtime error"), std::string::npos) << o.r.err;
  EXPECT_NE(o.r.err.find("cudatool: "), std::string::npos) << o.r.err;
  if (!must_mention.empty()) {
    EXPECT_NE(o.r.err.find(must_mention), std::string::npos) << o.r.err;
  }
}

uint64_t u64_at(const std::string& b, size_t off) {
  return load_le<uint64_t>(reinterpret_cast<const uint8_t*>(b.data() + off));
}
uint16_t u16_at(const std::string& b, size_t off) {
  return load_le<uint16_t>(reinterpret_cast<const uint8_t*>(b.data() + off));
}
template <class T>
void put(std::string& b, size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}

TEST(BadInput, NotElf) {
  expect_clean_failure(run_info("not-elf", "#!/bin/sh\necho hello\n"), "not an ELF file");
  expect_clean_failure(run_info("empty", ""), "not an ELF file");
}

// A trace or a capture passed to a static command: the error, then which commands read it.
TEST(BadInput, TraceOrCaptureGivenAsLibraryGetsAHint) {
  Outcome o = run_info("t.jsonl", "{\"cudatool_trace\":1,\"argv\":[]}\n", "exports");
  expect_clean_failure(o, "not an ELF file");
  EXPECT_NE(o.r.err.find("is a cudatool trace; read it with decode"), std::string::npos) << o.r.err;
  o = run_info("c.jsonl", "{\"seq\":0,\"sys\":\"open\"}\n");
  expect_clean_failure(o, "not an ELF file");
  EXPECT_NE(o.r.err.find("`cudatool import`"), std::string::npos) << o.r.err;
  o = run_info("text", "hello\n");  // neither: no hint
  expect_clean_failure(o, "not an ELF file");
  EXPECT_EQ(o.r.err.find("hint"), std::string::npos) << o.r.err;
}

TEST(BadInput, Elf32AndBigEndian) {
  std::string b = fixture_bytes();
  std::string e32 = b;
  e32[4] = 1;
  expect_clean_failure(run_info("elf32", e32), "ELF32");
  std::string be = b;
  be[5] = 2;
  expect_clean_failure(run_info("big-endian", be), "big-endian");
}

TEST(BadInput, WrongMachineIsReadGracefully) {
  std::string b = fixture_bytes();
  put<uint16_t>(b, 18, 183);  // EM_AARCH64: still an ELF64 shared object, so info works
  RunResult r = run({cudatool_bin(), "info", write_temp("aarch64", b)});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("AARCH64"), std::string::npos);
}

TEST(BadInput, TruncatedAtEveryHeaderBoundary) {
  std::string b = fixture_bytes();
  uint64_t phoff = u64_at(b, 32), shoff = u64_at(b, 40);
  uint16_t phnum = u16_at(b, 56), shnum = u16_at(b, 60);
  std::vector<size_t> cuts = {1, 4, 5, 16, 24, 40, 52, 63, 64};
  for (uint16_t i = 0; i <= phnum; ++i)
    cuts.push_back(phoff + i * 56u), cuts.push_back(phoff + i * 56u + 20);
  for (uint16_t i = 0; i < shnum; ++i)
    cuts.push_back(shoff + i * 64u), cuts.push_back(shoff + i * 64u + 30);
  cuts.push_back(b.size() - 1);
  for (size_t k = 0; k < cuts.size(); ++k) {
    size_t cut = cuts[k];
    if (cut >= b.size() || !test_sample(k)) continue;
    for (const char* cmd : {"info", "exports", "imports"}) {
      expect_clean_failure(run_info("trunc-" + std::to_string(cut), b.substr(0, cut), cmd));
    }
  }
}

TEST(BadInput, SectionAndSegmentOffsetsPastTheEnd) {
  std::string b = fixture_bytes();
  uint64_t shoff = u64_at(b, 40);
  uint16_t shnum = u16_at(b, 60);
  for (uint16_t i = 1; i < shnum; ++i) {
    std::string m = b;
    put<uint64_t>(m, shoff + i * 64u + 24, uint64_t{1} << 40);  // sh_offset
    Outcome o = run_info("shoff-" + std::to_string(i), m);
    // NOBITS sections have no file bytes: moving their offset is harmless.
    if (o.r.status == 0) continue;
    expect_clean_failure(o, "exceeds file size");
  }
  std::string m = b;
  put<uint64_t>(m, u64_at(b, 32) + 8, ~uint64_t{0} - 4);  // first p_offset
  expect_clean_failure(run_info("phoff", m), "program header [0]");
}

TEST(BadInput, AbsurdCounts) {
  std::string b = fixture_bytes();
  std::string m = b;
  put<uint16_t>(m, 60, 0xffff);  // e_shnum
  expect_clean_failure(run_info("shnum", m), "e_shnum");
  m = b;
  put<uint16_t>(m, 56, 0xffff);  // e_phnum
  expect_clean_failure(run_info("phnum", m), "e_phnum");
  m = b;
  put<uint64_t>(m, 40, ~uint64_t{0});  // e_shoff
  expect_clean_failure(run_info("shoff", m), "e_shoff");
  m = b;
  put<uint16_t>(m, 62, 0xfff0);  // e_shstrndx
  expect_clean_failure(run_info("shstrndx", m), "e_shstrndx");
}

TEST(BadInput, UnterminatedStrings) {
  // Overwrite the whole .dynstr with non-NUL bytes: every name is unterminated.
  std::string b = fixture_bytes();
  uint64_t shoff = u64_at(b, 40);
  uint16_t shnum = u16_at(b, 60);
  bool done = false;
  for (uint16_t i = 1; i < shnum; ++i) {
    uint32_t type =
        load_le<uint32_t>(reinterpret_cast<const uint8_t*>(b.data() + shoff + i * 64u + 4));
    uint64_t off = u64_at(b, shoff + i * 64u + 24), size = u64_at(b, shoff + i * 64u + 32);
    if (type == 3 /* SHT_STRTAB */ && off < 0x10000) {  // .dynstr is early; .shstrtab is last
      std::memset(b.data() + off, 'A', size);
      done = true;
      break;
    }
  }
  ASSERT_TRUE(done);
  for (const char* cmd : {"info", "exports", "imports"}) {
    expect_clean_failure(run_info("dynstr", b, cmd), "unterminated");
  }
}

TEST(BadInput, RandomMutationsNeverCrash) {
  std::string b = fixture_bytes();
  std::mt19937_64 rng(20261129);
  // Mutations concentrated in the headers and tables, where the parsers look.
  uint64_t hot = std::min<uint64_t>(b.size(), 0x2000);
  for (int i = 0; i < test_rounds(150); ++i) {
    std::string m = b;
    int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) {
      uint64_t at =
          (k % 2 == 0) ? rng() % hot : (u64_at(b, 40) + rng() % (b.size() - u64_at(b, 40)));
      m[at] = static_cast<char>(rng());
    }
    for (const char* cmd : {"info", "exports"}) {
      std::string p = write_temp("mut", m);
      RunResult r = run({cudatool_bin(), cmd, "--json", p}, 30);
      SCOPED_TRACE("mutation " + std::to_string(i));
      EXPECT_FALSE(r.timed_out);
      EXPECT_EQ(r.signal, 0) << r.err;
      EXPECT_TRUE(r.status == 0 || r.status == 2) << r.status << r.err;
      EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("runtime error"), std::string::npos) << r.err;
    }
  }
}

TEST(BadInput, MissingFileAndDirectory) {
  RunResult r = run({cudatool_bin(), "info", "/nonexistent/libcuda.so"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
  r = run({cudatool_bin(), "info", "/tmp"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("directory"), std::string::npos) << r.err;
  r = run({cudatool_bin(), "infoo"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown command 'infoo'"), std::string::npos) << r.err;
  r = run({cudatool_bin(), "info", "--no-such-flag"});
  EXPECT_EQ(r.status, 2);
}

// `cudatool --help` lists every command once, under the static or the dynamic heading, and
// every command has its own --help with examples.
TEST(Cli, HelpListsEveryCommandUnderItsHeading) {
  RunResult r = run({cudatool_bin(), "--help"});
  ASSERT_EQ(r.status, 0) << r.err;
  size_t stat = r.out.find("Static: a libcuda build");
  size_t dyn = r.out.find("Dynamic: what a program asks");
  ASSERT_NE(stat, std::string::npos) << r.out;
  ASSERT_NE(dyn, std::string::npos) << r.out;
  const std::vector<std::string> statics = {"info",      "exports", "imports",   "cubins", "tables",
                                            "functions", "addr",    "symbolize", "xrefs",  "index",
                                            "delta",     "history", "abi"};
  const std::vector<std::string> dynamics = {"trace",  "import", "decode", "stats",
                                             "export", "ab",     "replay", "explore"};
  auto check = [&](const std::string& c, bool dynamic) {
    size_t at = r.out.find("\n  " + c + " ");
    ASSERT_NE(at, std::string::npos) << c << " missing from --help:\n" << r.out;
    if (dynamic) {
      EXPECT_GT(at, dyn) << c << " should be under the dynamic heading";
    } else {
      EXPECT_TRUE(at > stat && at < dyn) << c << " should be under the static heading";
    }
    RunResult h = run({cudatool_bin(), c, "--help"});
    EXPECT_EQ(h.status, 0) << c;
    EXPECT_NE(h.out.find("Usage: cudatool " + c), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("--json"), std::string::npos) << c << " has no --json";
  };
  for (const auto& c : statics) check(c, false);
  for (const auto& c : dynamics) check(c, true);
  // And no command beyond these (a new one belongs in one of the lists, and in README's tables).
  size_t listed = 0;
  std::istringstream lines(r.out.substr(stat));
  for (std::string l; std::getline(lines, l);) {
    if (l.size() > 4 && l.starts_with("  ") && std::islower(static_cast<unsigned char>(l[2]))) {
      ++listed;
    }
  }
  EXPECT_EQ(listed, statics.size() + dynamics.size()) << r.out;
}

}  // namespace
}  // namespace cudatool::test
