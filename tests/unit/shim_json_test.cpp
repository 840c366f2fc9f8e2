// The preload shim writes its trace lines with its own C writers (src/record/preload/shim_json.c,
// no C++ runtime in a traced program); here they are held against the writers the rest of the
// project reads and writes traces with: json_escape_to for strings, append_hex for buffers,
// std::to_chars for numbers. Inputs are random (fixed seed) and placed at every alignment, and
// strings also end at the last byte before an unmapped page, where a read past the terminator
// that left its aligned 16 bytes would fault.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/hex.hpp"
#include "base/json_writer.hpp"
#include "shim_json_probe.h"
#include "trace/trace_json.hpp"

namespace cudatool {
namespace {

// Two pages, the second unmapped: text placed to end at the boundary.
class GuardedPage {
 public:
  GuardedPage() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<char*>(p);
    EXPECT_EQ(mprotect(base_ + page_, page_, PROT_NONE), 0);
  }
  ~GuardedPage() { munmap(base_, 2 * page_); }
  // A NUL-terminated copy of s whose terminator is the page's last byte.
  const char* at_end(const std::string& s) {
    char* dst = base_ + page_ - 1 - s.size();
    std::memcpy(dst, s.data(), s.size());
    dst[s.size()] = '\0';
    return dst;
  }
  char* at(size_t off) { return base_ + off; }

 private:
  size_t page_ = 0;
  char* base_ = nullptr;
};

std::string random_text(std::mt19937_64& rng, size_t n) {
  std::string s(n, ' ');
  for (char& c : s) {
    uint64_t r = rng();
    // Mostly plain characters (runs the fast path copies), some of every other byte but NUL.
    c = static_cast<char>(r % 8 != 0 ? 0x20 + (r >> 8) % 95 : 1 + (r >> 8) % 255);
  }
  return s;
}

std::string shim_string(const char* s) {
  std::vector<char> out(6 * std::strlen(s) + 2);
  return std::string(out.data(), probe_put_string(out.data(), s));
}

TEST(ShimJson, StringsAreEscapedAsTheTraceWriterEscapesThem) {
  std::mt19937_64 rng(13);
  GuardedPage page;
  for (int i = 0; i < 20000; ++i) {
    std::string s = random_text(rng, rng() % 300);
    std::string want;
    json_escape_to(want, s);
    ASSERT_EQ(shim_string(page.at_end(s)), want) << "at the page's end, case " << i;
    size_t off = rng() % 64;
    std::memcpy(page.at(off), s.c_str(), s.size() + 1);
    ASSERT_EQ(shim_string(page.at(off)), want) << "at offset " << off << ", case " << i;
  }
  // Every byte value alone and inside a plain run of each length around 16.
  for (int c = 1; c < 256; ++c) {
    for (size_t len : {size_t{0}, size_t{15}, size_t{16}, size_t{17}, size_t{31}}) {
      std::string s = std::string(len, 'a') + static_cast<char>(c) + std::string(len, 'b');
      std::string want;
      json_escape_to(want, s);
      ASSERT_EQ(shim_string(page.at_end(s)), want) << "byte " << c << " after " << len;
    }
  }
}

TEST(ShimJson, BuffersAreHexAsTheTraceWriterWritesThem) {
  std::mt19937_64 rng(14);
  std::vector<uint8_t> bytes(600);
  std::vector<char> out(2 * bytes.size() + 2);
  for (int i = 0; i < 20000; ++i) {
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    size_t off = rng() % 32, n = rng() % 520;
    std::string want = "\"";
    append_hex(want, ByteView(bytes.data() + off, n));
    want += '"';
    ASSERT_EQ(std::string(out.data(), probe_put_bytes(out.data(), bytes.data() + off, n)), want)
        << n << " bytes at offset " << off;
  }
}

TEST(ShimJson, NumbersAreWrittenAsToChars) {
  std::mt19937_64 rng(15);
  std::vector<uint64_t> values = {0, 1, 9, 10, 15, 16, 99, 100, 255, 256, UINT64_MAX, 1ull << 63};
  for (int i = 0; i < 100000; ++i) values.push_back(rng() >> (rng() % 64));
  char out[32], want[32];
  for (uint64_t v : values) {
    char* end = std::to_chars(want, want + sizeof want, v, 16).ptr;
    ASSERT_EQ(std::string(out, probe_put_hex(out, v)), std::string(want, end)) << v;
    end = std::to_chars(want, want + sizeof want, v).ptr;
    ASSERT_EQ(std::string(out, probe_put_u64(out, v)), std::string(want, end)) << v;
  }
}

}  // namespace
}  // namespace cudatool

// The shim's stack record line is the C++ writer's, byte for byte, and fits the bound the shim
// sizes its buffer by (the largest ids and addresses, the frame limit) with its stores.
TEST(ShimJson, StackRecordsAreTheTraceWritersLines) {
  std::vector<std::vector<uint64_t>> cases = {{0x1}, {0x55cbb770a0a9, 0x7fad4604524a}, {}};
  for (int i = 0; i < 32; ++i) cases.back().push_back(~uint64_t{0} - static_cast<uint64_t>(i));
  for (uint64_t id : {uint64_t{1}, uint64_t{4096}, ~uint64_t{0}}) {
    for (const auto& f : cases) {
      std::string want;
      cudatool::trace::append_stack_record_line(want, cudatool::trace::StackRecord{id, f});
      const size_t bound = 64 + 21 * f.size();
      std::vector<char> out(bound + 64, '#');
      size_t n = probe_stack_record(out.data(), id, f.data(), static_cast<int>(f.size()));
      EXPECT_LE(n, bound) << want;
      EXPECT_EQ(std::string(out.data(), n), want);
      // The SIMD writers may store past the line's end, never past the bound.
      for (size_t i = bound; i < out.size(); ++i) ASSERT_EQ(out[i], '#') << i << " " << want;
    }
  }
}
