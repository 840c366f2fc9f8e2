#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "base/helper_thread.hpp"
#include "base/hex.hpp"
#include "base/json_writer.hpp"
#include "base/permute.hpp"
#include "base/prefault.hpp"
#include "base/regex.hpp"
#include "base/sha256.hpp"
#include "base/text_stage.hpp"

namespace cudatool {
namespace {

TEST(ByteView, SubIsOverflowSafe) {
  uint8_t buf[16] = {};
  ByteView v(buf, sizeof buf, 100);
  EXPECT_TRUE(v.sub(0, 16));
  EXPECT_TRUE(v.sub(16, 0));
  EXPECT_FALSE(v.sub(17, 0));
  EXPECT_FALSE(v.sub(1, 16));
  EXPECT_FALSE(v.sub(8, UINT64_MAX));  // off + len would wrap
  EXPECT_FALSE(v.sub(UINT64_MAX, 2));
  EXPECT_EQ(v.sub(4, 4)->base(), 104u);
  EXPECT_EQ(v.clamp(10, 100).size(), 6u);
}

TEST(ByteView, ReadAndCString) {
  const uint8_t buf[] = {0x78, 0x56, 0x34, 0x12, 'a', 'b', 0, 'c'};
  ByteView v(buf, sizeof buf);
  EXPECT_EQ(*v.read<uint32_t>(0), 0x12345678u);
  EXPECT_FALSE(v.read<uint64_t>(1));
  EXPECT_EQ(*v.cstring(4), "ab");
  EXPECT_FALSE(v.cstring(7));  // unterminated
  EXPECT_FALSE(v.cstring(8));
  EXPECT_EQ(*v.find(std::string_view("b\0c", 3)), 5u);
}

TEST(Cursor, FirstErrorSticks) {
  const uint8_t buf[] = {1, 2, 3};
  Cursor c(ByteView(buf, 3));
  EXPECT_EQ(c.u16(), 0x0201);
  EXPECT_EQ(c.u16(), 0);  // only one byte left
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.error_pos(), 2u);
  EXPECT_EQ(c.u8(), 0);  // stays failed, does not advance
  EXPECT_EQ(c.pos(), 2u);
}

TEST(Cursor, Leb128) {
  const uint8_t u[] = {0xe5, 0x8e, 0x26};  // 624485 (DWARF 5, section 7.6)
  Cursor a(ByteView(u, 3));
  EXPECT_EQ(a.uleb128(), 624485u);
  EXPECT_TRUE(a.ok());
  const uint8_t s[] = {0xc0, 0xbb, 0x78};  // -123456
  Cursor b(ByteView(s, 3));
  EXPECT_EQ(b.sleb128(), -123456);
  const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  Cursor c(ByteView(max, 10));
  EXPECT_EQ(c.uleb128(), UINT64_MAX);
  EXPECT_TRUE(c.ok());
  const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  Cursor d(ByteView(big, 10));
  d.uleb128();
  EXPECT_FALSE(d.ok());
  const uint8_t runaway[] = {0x80, 0x80, 0x80};
  Cursor e(ByteView(runaway, 3));
  e.uleb128();
  EXPECT_FALSE(e.ok());
  std::vector<uint8_t> padded(64, 0x80);
  padded.back() = 0;
  Cursor f(ByteView(padded.data(), padded.size()));
  f.uleb128();
  EXPECT_FALSE(f.ok());  // more than 10 bytes
}

TEST(JsonWriter, ProducesValidJson) {
  std::string out;
  JsonWriter w(out);
  w.begin_object()
      .kv("s", std::string_view("q\"\\\n\x01\xff", 6))
      .kv("n", uint64_t{18446744073709551615ULL});
  w.kv("i", -5).kv_hex("a", 0xdeadbeef).key("e").begin_array().end_array();
  w.key("o").begin_object().end_object().key("b").hex_bytes(
      reinterpret_cast<const uint8_t*>("\x00\xab"), 2);
  w.end_object();
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["n"].get<uint64_t>(), 18446744073709551615ULL);
  EXPECT_EQ(j["a"], "0xdeadbeef");
  EXPECT_EQ(j["b"], "00ab");
  EXPECT_EQ(j["s"].get<std::string>().size(), 7u);  // 0xff became U+00FF (2 bytes in UTF-8)
  std::string compact;
  JsonWriter c(compact, false);
  c.begin_array().value(1).value("x").null().value(true).end_array();
  EXPECT_EQ(compact, "[1,\"x\",null,true]");
}

// Compact keys take a one-append path when they need no escaping; the others, and keys too long
// for it, are escaped as values are.
TEST(JsonWriter, CompactKeysCleanEscapedAndLong) {
  std::string out;
  JsonWriter w(out, false);
  std::string long_key(40, 'k');
  w.begin_object().kv("seq", 1).kv("q\"k", 2).kv(std::string_view("n\0", 2), 3).kv(long_key, 4);
  w.kv("", 5).end_object();
  EXPECT_EQ(out, "{\"seq\":1,\"q\\\"k\":2,\"n\\u0000\":3,\"" + long_key + "\":4,\"\":5}");
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["q\"k"], 2);
  EXPECT_EQ(j[std::string("n\0", 2)], 3);
  EXPECT_EQ(j[long_key], 4);
}

// A compile-time key ("seq"_key) writes what the same key as a string writes: with its comma
// after the first member, at the start of an object and of a nested one, and indented when pretty.
TEST(JsonWriter, CompileTimeKeysWriteWhatStringKeysWrite) {
  using namespace json_literals;  // NOLINT(google-build-using-namespace)
  for (bool pretty : {false, true}) {
    std::string by_key, by_string;
    JsonWriter a(by_key, pretty), b(by_string, pretty);
    a.begin_object().kv("seq"_key, 1).kv_hex("h_client"_key, 0xc1d0).key("o"_key).begin_object();
    a.kv_or_null("path"_key, "").kv("x"_key, "y").end_object().key("args"_key).begin_array();
    a.end_array().end_object();
    b.begin_object().kv("seq", 1).kv_hex("h_client", 0xc1d0).key("o").begin_object();
    b.kv_or_null("path", "").kv("x", "y").end_object().key("args").begin_array();
    b.end_array().end_object();
    EXPECT_EQ(by_key, by_string) << pretty;
  }
  std::string out;
  JsonWriter c(out, false);
  c.begin_object().kv("a"_key, 1).end_object();
  EXPECT_EQ(out, "{\"a\":1}");
  EXPECT_EQ(("status_name"_key).name(), "status_name");
}

// String escaping (16-byte blocks, a short tail loaded in one block unless it ends near a page's
// end), by json_escape_to and by the writer in both modes, against a plain byte-by-byte escaper
// of the rules in json_writer.hpp: every length up to 70, each byte that needs escaping planted
// at every position, and strings that end exactly at a page followed by an inaccessible one (a
// load past the end there would fault).
TEST(JsonWriter, StringsEscapeAsAPlainEscaperDoes) {
  auto plain = [](std::string_view v) {
    std::string out = "\"";
    for (char ch : v) {
      auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += ch;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c >= 0x7f) {
        char u[8];
        std::snprintf(u, sizeof u, "\\u%04x", c);
        out += u;
      } else {
        out += ch;
      }
    }
    return out + "\"";
  };
  long page = sysconf(_SC_PAGESIZE);
  auto* map = static_cast<char*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(map + page, page, PROT_NONE), 0);
  const char special[] = {'"', '\\', '\n', '\t', 0x01, 0x1f, 0x7f, static_cast<char>(0xc3)};
  std::mt19937 rng(5);
  for (size_t len = 0; len <= 70; ++len) {
    std::string clean(len, 'a');
    for (char& c : clean) c = static_cast<char>('!' + rng() % 90);
    for (char& c : clean) {
      if (c == '"' || c == '\\') c = 'q';
    }
    std::vector<std::string> cases{clean};
    for (size_t at = 0; at < len; ++at) {
      for (char b : special) {
        std::string t = clean;
        t[at] = b;
        cases.push_back(t);
      }
    }
    for (const std::string& c : cases) {
      char* at_end = map + page - c.size();  // ends where the inaccessible page starts
      std::memcpy(at_end, c.data(), c.size());
      std::string followed = c + "xyz";  // a view whose next bytes need no escaping
      for (std::string_view v : {std::string_view(c), std::string_view(at_end, c.size()),
                                 std::string_view(followed.data(), c.size())}) {
        std::string want = plain(v), got;
        json_escape_to(got, v);
        ASSERT_EQ(got, want) << len;
        for (auto mode : {JsonWriter::Mode::kDirect, JsonWriter::Mode::kStaged}) {
          got.clear();
          JsonWriter w(got, false, mode);
          w.value(v);
          w.flush();
          ASSERT_EQ(got, want) << len;
        }
      }
    }
  }
  munmap(map, 2 * page);
  // An empty view's data may be null (UBSan's memcpy check runs in the ASan+UBSan pass).
  for (auto mode : {JsonWriter::Mode::kDirect, JsonWriter::Mode::kStaged}) {
    std::string out;
    JsonWriter w(out, false, mode);
    w.begin_object().kv(std::string_view(), std::string_view()).end_object();
    EXPECT_EQ(out, "{\"\":\"\"}");
  }
}

// A staged writer hands its text on when a top-level value ends (and at finish, flush and its
// end), a direct one after every call; a string longer than the stage goes through whole.
TEST(JsonWriter, StagedWriterHandsOnWholeDocuments) {
  using namespace json_literals;  // NOLINT(google-build-using-namespace)
  std::string staged, direct;
  {
    JsonWriter s(staged, false, JsonWriter::Mode::kStaged);
    JsonWriter d(direct, false);
    for (JsonWriter* w : {&s, &d}) w->begin_object().kv("seq"_key, 1).key("name"_key);
    EXPECT_EQ(staged, "");
    EXPECT_EQ(direct, "{\"seq\":1,\"name\":");
    std::string big(100000, 'x');
    big[77777] = '"';
    for (JsonWriter* w : {&s, &d}) w->value(big).end_object();
    EXPECT_EQ(staged, direct);
    EXPECT_EQ(staged.size(), 100000u + 20u);
    s.value(7);  // a top-level scalar is a whole document too
    EXPECT_EQ(staged.back(), '7');
    s.begin_array().value(1);
  }
  EXPECT_TRUE(staged.ends_with("}7[1"))
      << staged.substr(staged.size() - 10);  // the rest, at its end
}

// A stage hands its text on at flush() and at its end, and a piece larger than its buffer grows
// it without losing what came before.
TEST(TextStage, HandsOnInOrderAndGrows) {
  std::string out = "<";
  {
    TextStage t(out, 8);
    t += "abc";
    t += 'd';
    t.fill(3, '-');
    t.put(std::string_view());  // empty, null data: nothing written (and no memcpy from null)
    EXPECT_EQ(out, "<");
    t.flush();
    EXPECT_EQ(out, "<abcd---");
    t.put(std::string(20, 'x'));  // more than the buffer holds
    char* p = t.room(4);
    std::memcpy(p, "wxyz", 4);
    t.set_cursor(p + 2);
  }
  EXPECT_EQ(out, "<abcd---" + std::string(20, 'x') + "wx");
}

TEST(Hex, RoundTripAndParse) {
  auto b = parse_hex_bytes("00ff7A");
  ASSERT_TRUE(b);
  EXPECT_EQ(to_hex(ByteView(b->data(), b->size())), "00ff7a");
  EXPECT_FALSE(parse_hex_bytes("abc"));
  EXPECT_FALSE(parse_hex_bytes("zz"));
  EXPECT_EQ(parse_u64("0x10"), 16u);
  EXPECT_EQ(parse_u64("10"), 10u);
  EXPECT_EQ(parse_u64("10", false), 16u);
  EXPECT_FALSE(parse_u64("0x"));
  EXPECT_FALSE(parse_u64("0x1ffffffffffffffff"));
}

// The decoder (AVX2 where the processor has it, then SSE2 and bytes) and its SSE2 path against a
// plain one, on every length up to 160 digits (several 32- and 16-digit steps and their tails),
// with one bad character (each kind that could pass a careless range check) planted at every
// position.
TEST(Hex, FastDecoderAgreesWithPlainOne) {
  auto plain = [](std::string_view s, std::vector<uint8_t>& out) {
    out.resize(s.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      int v[2];
      for (int k = 0; k < 2; ++k) {
        char c = s[2 * i + k];
        v[k] = c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
        if (v[k] < 0) return false;
      }
      out[i] = static_cast<uint8_t>(v[0] << 4 | v[1]);
    }
    return true;
  };
  std::mt19937 rng(7);
  const char digits[] = "0123456789abcdefABCDEF";
  const char bad[] = {'"',
                      '/',
                      ':',
                      '@',
                      'G',
                      '`',
                      'g',
                      0x10,
                      0x19,
                      0x1a,
                      0x00,
                      static_cast<char>(0x80),
                      static_cast<char>(0xb0),
                      static_cast<char>(0xe1),
                      'x'};
  for (auto* decode : {&decode_hex_into, &decode_hex_into_sse2}) {
    for (size_t len = 0; len <= 160; len += 2) {
      std::string s(len, '0');
      for (char& c : s) c = digits[rng() % 22];
      std::vector<uint8_t> got(len / 2 + 1), want;
      ASSERT_TRUE(decode(s, got.data()));
      ASSERT_TRUE(plain(s, want));
      got.resize(len / 2);
      EXPECT_EQ(got, want) << s;
      for (size_t at = 0; at < len; ++at) {
        for (char b : bad) {
          std::string t = s;
          t[at] = b;
          std::vector<uint8_t> o(len / 2 + 1);
          EXPECT_FALSE(decode(t, o.data())) << len << " " << at << " " << int(b);
        }
      }
    }
  }
}

// The AVX2 path is chosen from glibc's view of the processor (CPU_FEATURE_ACTIVE); libgcc's own
// detection, here in the test only, must agree, or the path the test above means to compare
// with SSE2 would go untested on a processor that has it (or crash on one that does not).
TEST(Hex, TakesTheAvx2PathExactlyWhereTheProcessorHasIt) {
#if defined(__x86_64__)
  EXPECT_EQ(hex_decoding_uses_avx2(), __builtin_cpu_supports("avx2") != 0);
#else
  EXPECT_FALSE(hex_decoding_uses_avx2());
#endif
}

// The SSE2 encoder against snprintf, on every length up to 70 bytes (the 16-byte loop, its
// tail and both together) and every byte value, written exactly where asked and nowhere else.
TEST(Hex, FastEncoderAgreesWithSnprintf) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  std::mt19937 rng(11);
  for (size_t len = 0; len <= 70; ++len) {
    for (size_t start : {size_t{0}, size_t{256} - len, size_t{rng() % (257 - len)}}) {
      std::string want;
      for (size_t i = 0; i < len; ++i) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", all[start + i]);
        want += two;
      }
      std::string got(2 * len + 2, '#');
      encode_hex_into(all.data() + start, len, got.data() + 1);
      EXPECT_EQ(got, "#" + want + "#") << len << " from " << start;
      EXPECT_EQ(to_hex(ByteView(all.data() + start, len)), want);
    }
  }
}

TEST(Sha256, KnownVectors) {
  // FIPS 180-4 examples.
  EXPECT_EQ(sha256_hex(ByteView(std::string_view(""))),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(ByteView(std::string_view("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(ByteView(
                std::string_view("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// The user's regular expressions (xrefs --string /RE/, replay --fails-if): POSIX extended with
// glibc's \w \s \b, matched over a view (no NUL needed, NULs inside allowed). Patterns that make
// a backtracking matcher take exponential time on a 300-byte text (std::regex did: xrefs
// --string '/^(\w+\s?)*$/' ran past any limit) must answer; a hang fails this test by ctest's
// timeout, and a 200,000-byte program output must not exhaust the stack.
TEST(PosixRegex, MatchesAndRefusesAndDoesNotBacktrack) {
  auto re = PosixRegex::compile("^CUDA_ERROR_[A-Z_]+$");
  ASSERT_TRUE(re);
  EXPECT_TRUE(re->search("CUDA_ERROR_OUT_OF_MEMORY"));
  EXPECT_FALSE(re->search("CUDA_ERROR_out"));
  std::string_view cut = "xxCUDA_ERROR_A";
  EXPECT_FALSE(re->search(cut.substr(0, 5)));
  EXPECT_TRUE(re->search(cut.substr(2)));
  auto icase = PosixRegex::compile("out of memory", true);
  ASSERT_TRUE(icase);
  EXPECT_TRUE(icase->search("OUT OF MEMORY"));
  auto gnu = PosixRegex::compile("\\bquorum\\s+l[o]st\\b");
  ASSERT_TRUE(gnu);
  EXPECT_TRUE(gnu->search(std::string("a\0b quorum  lost!", 17)));
  auto bad = PosixRegex::compile("([");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("not a regular expression"), std::string::npos);
  std::string text;
  for (int i = 0; i < 300; ++i) text += i % 7 == 6 ? ' ' : 'a';
  text.back() = '!';
  for (const char* p : {"^(\\w+\\s?)*$", "^(.*)*z$", "((.)*)*QQQ", "(a|aa)*b"}) {
    auto r = PosixRegex::compile(p);
    ASSERT_TRUE(r) << p;
    EXPECT_FALSE(r->search(text)) << p;
  }
  // A program's output (replay --fails-if) is searched line by line, as grep -E reads it: 200,000
  // bytes in 20,000 lines cost 20,000 short searches, not one quadratic one.
  std::string output;
  for (int i = 0; i < 20000; ++i) output += "xxxxxxxxx\n";
  auto tail = PosixRegex::compile("(x|xx)+y");
  ASSERT_TRUE(tail);
  EXPECT_FALSE(tail->search_lines(output));
  EXPECT_TRUE(tail->search_lines(output + "xxy"));
  EXPECT_FALSE(tail->search_lines(output + "x\ny"));
  EXPECT_TRUE(tail->search_lines("xy"));
}

TEST(Diagnostics, InsertPlacesItemsWhereTheyWouldHaveBeenReported) {
  auto e = [](const char* name) { return make_error(name, "", std::nullopt, "damage"); };
  Diagnostics d, other;
  d.report(e("a"));
  d.report(e("d"));
  other.report(e("b"));
  other.report(e("c"));
  d.insert(1, other);
  ASSERT_EQ(d.items().size(), 4u);
  std::string order;
  for (const auto& i : d.items()) order += i.structure;
  EXPECT_EQ(order, "abcd");
  EXPECT_EQ(d.count(), 4u);
  // Past the end means at the end; nothing kept beyond kMaxKept, every report counted.
  d.insert(99, other);
  EXPECT_EQ(d.items().back().structure, "c");
  Diagnostics full, many;
  for (size_t i = 0; i < Diagnostics::kMaxKept; ++i) full.report(e("x"));
  for (int i = 0; i < 5; ++i) many.report(e("y"));
  full.insert(0, many);
  EXPECT_EQ(full.items().size(), Diagnostics::kMaxKept);
  EXPECT_EQ(full.items().front().structure, "y");
  EXPECT_EQ(full.items().back().structure, "x");
  EXPECT_EQ(full.count(), Diagnostics::kMaxKept + 5);
}

TEST(HelperThread, RunsTheWorkJoinsAndLeavesItFreeToRunAnywhere) {
  cpu_set_t process{};
  ASSERT_EQ(sched_getaffinity(0, sizeof process, &process), 0);
  bool ran = false;
  cpu_set_t helper{};
  int helper_rc = -1;
  {
    HelperThread h([&] {
      ran = true;
      helper_rc = sched_getaffinity(0, sizeof helper, &helper);
    });
  }  // the destructor joins
  EXPECT_TRUE(ran);
  ASSERT_EQ(helper_rc, 0);
  EXPECT_TRUE(CPU_EQUAL(&helper, &process)) << "the helper kept its start-up CPU set";
  int runs = 0;
  HelperThread twice([&] { ++runs; });
  twice.join();
  twice.join();  // joining again is nothing
  EXPECT_EQ(runs, 1);
}

// permute_in_place against building the rearranged vector by copying: random permutations of
// every size up to 200 (many cycles, fixed points, one long cycle), and an empty order.
TEST(PermuteInPlace, GivesWhatACopyGives) {
  std::mt19937_64 rng(20261205);
  for (uint32_t n = 0; n <= 200; ++n) {
    std::vector<uint32_t> from(n);
    for (uint32_t i = 0; i < n; ++i) from[i] = i;
    std::shuffle(from.begin(), from.end(), rng);
    if (n % 7 == 0 && n > 1) std::rotate(from.begin(), from.begin() + 1, from.end());
    std::vector<std::string> items(n);
    for (uint32_t i = 0; i < n; ++i) items[i] = "item" + std::to_string(i);
    std::vector<std::string> want(n);
    for (uint32_t i = 0; i < n; ++i) want[i] = items[from[i]];
    permute_in_place(items, std::span<uint32_t>(from));
    ASSERT_EQ(items, want) << n;
  }
  std::vector<int> untouched{3, 1, 2};
  permute_in_place(untouched, std::span<uint32_t>());
  EXPECT_EQ(untouched, (std::vector<int>{3, 1, 2}));
}

// prefault_for_write maps exactly the whole pages inside the range, and below 16 pages nothing:
// mincore() reports which pages of a fresh anonymous mapping are now resident.
TEST(Prefault, MapsTheWholePagesInsideTheRangeAndNothingElse) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t pages = 64;
  auto resident = [&](void* base) {
    std::vector<unsigned char> v(pages);
    EXPECT_EQ(mincore(base, pages * page, v.data()), 0);
    std::vector<bool> out(pages);
    for (size_t i = 0; i < pages; ++i) out[i] = (v[i] & 1) != 0;
    return out;
  };
  void* probe =
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  if (madvise(probe, page, 23 /* MADV_POPULATE_WRITE */) != 0) {
    munmap(probe, pages * page);
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14): prefault_for_write "
                    "leaves the pages to fault in as before";
  }
  munmap(probe, pages * page);

  auto* base = static_cast<char*>(
      mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  // From 100 bytes into page 1 to 200 bytes into page 41: pages 2 … 40 lie wholly inside.
  prefault_for_write(base + page + 100, 40 * page + 100);
  auto r = resident(base);
  for (size_t i = 0; i < pages; ++i) EXPECT_EQ(r[i], i >= 2 && i <= 40) << "page " << i;
  // 15 whole pages: not worth a system call.
  prefault_for_write(base + 48 * page, 15 * page);
  r = resident(base);
  for (size_t i = 48; i < pages; ++i) EXPECT_FALSE(r[i]) << "page " << i;
  // A vector's room beyond its size.
  munmap(base, pages * page);
  std::vector<uint64_t> v;
  v.reserve(64 * page / sizeof(uint64_t));
  v.resize(10);
  prefault_capacity(v);
  std::vector<unsigned char> in(1);
  auto* mid = reinterpret_cast<char*>(v.data() + v.capacity() / 2);
  ASSERT_EQ(mincore(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(mid) & ~(page - 1)), page,
                    in.data()),
            0);
  EXPECT_TRUE(in[0] & 1);
  prefault_for_write(nullptr, 1 << 20);  // nothing to do, and no crash
}

}  // namespace
}  // namespace cudatool
