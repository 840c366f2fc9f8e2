// JsonReader against nlohmann/json: every document both accept must give the same tree, every
// document nlohmann rejects must be rejected with an offset and a reason.
#include "base/json_reader.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/hex.hpp"
#include "base/short_key.hpp"

namespace cudatool {
namespace {

using nlohmann::json;

// Reads one value with the pull API into nlohmann's tree (the independent implementation).
bool to_tree(JsonReader& r, json& out) {
  switch (r.peek()) {
    case JsonReader::Kind::kObject: {
      out = json::object();
      if (!r.enter_object()) return false;
      std::string_view key;
      while (r.next_member(key)) {
        std::string k(key);
        json v;
        if (!to_tree(r, v)) return false;
        out[k] = v;
      }
      return r.ok();
    }
    case JsonReader::Kind::kArray: {
      out = json::array();
      if (!r.enter_array()) return false;
      while (r.next_element()) {
        json v;
        if (!to_tree(r, v)) return false;
        out.push_back(v);
      }
      return r.ok();
    }
    case JsonReader::Kind::kString: {
      std::string s;
      if (!r.string(s)) return false;
      out = s;
      return true;
    }
    case JsonReader::Kind::kBool: {
      bool b = false;
      if (!r.boolean(b)) return false;
      out = b;
      return true;
    }
    case JsonReader::Kind::kNull:
      out = nullptr;
      return r.null();
    case JsonReader::Kind::kNumber: {
      // Same preference as nlohmann: unsigned, then signed, then double.
      JsonReader probe = r;
      uint64_t u = 0;
      if (probe.u64(u)) {
        r = probe;
        out = u;
        return true;
      }
      probe = r;
      int64_t i = 0;
      if (probe.i64(i)) {
        r = probe;
        out = i;
        return true;
      }
      double d = 0;
      if (!r.f64(d)) return false;
      out = d;
      return true;
    }
    default:
      r.skip();  // records the error
      return false;
  }
}

bool parse_doc(std::string_view text, json& out, std::string* err = nullptr) {
  JsonReader r(text);
  bool ok = to_tree(r, out) && r.at_end();
  if (!ok && err != nullptr) *err = r.ok() ? "trailing characters" : r.error_message();
  return ok;
}

TEST(JsonReader, AgreesWithNlohmannOnValidDocuments) {
  const char* docs[] = {
      "{}",
      "[]",
      " { \"a\" : 1 , \"b\" : [ true , false , null ] } ",
      R"({"seq":0,"t_us":9624.0,"tid":540,"sys":"open","path":"/dev/nvidiactl","flags":"0x2","ret":9})",
      R"({"s":"tab\there \"q\" back\\slash \/ \b\f\n\r \u0041\u00e9\u4e2d\ud83d\ude00"})",
      R"([-0, 0, 1, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615])",
      R"([1.5, -2.25e-3, 6.02E23, 1e0, 0.0])",
      R"({"nested":{"deeper":{"deepest":[[[[]]]]}}})",
      R"("just a string")",
      "42",
      "null",
      R"({"dup":1,"dup":2})",
      "{\"utf8\":\"\xc3\xa9\xe4\xb8\xad\"}",
  };
  for (const char* d : docs) {
    json mine, theirs = json::parse(d);
    std::string err;
    ASSERT_TRUE(parse_doc(d, mine, &err)) << d << ": " << err;
    EXPECT_EQ(mine, theirs) << d;
  }
}

// Random trees serialised by nlohmann (compact and pretty), read back by JsonReader.
json random_value(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 4 ? 4 : 6);
  switch (kind(rng)) {
    case 0:
      return nullptr;
    case 1:
      return (rng() & 1) != 0;
    case 2:
      return static_cast<int64_t>(rng());
    case 3:
      return std::ldexp(static_cast<double>(rng() % 1000000) - 500000.0,
                        static_cast<int>(rng() % 40) - 20);
    case 4: {
      std::string s;
      int n = static_cast<int>(rng() % 12);
      for (int i = 0; i < n; ++i) {
        uint32_t c = static_cast<uint32_t>(rng() % 140);
        if (c >= 128) {
          s += "\xc3\xa9";  // é
        } else {
          s.push_back(static_cast<char>(c));
        }
      }
      return s;
    }
    case 5: {
      json a = json::array();
      int n = static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      int n = static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i)
        o["k" + std::to_string(rng() % 100)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

TEST(JsonReader, RoundTripsRandomDocuments) {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 3000; ++i) {
    json v = random_value(rng, 0);
    for (const std::string& text : {v.dump(), v.dump(2)}) {
      json mine;
      std::string err;
      ASSERT_TRUE(parse_doc(text, mine, &err)) << text << ": " << err;
      EXPECT_EQ(mine, json::parse(text)) << text;
    }
  }
}

TEST(JsonReader, RejectsWhatNlohmannRejects) {
  const char* bad[] = {
      "",
      "{",
      "}",
      "[1,]",
      "[,1]",
      "{\"a\"}",
      "{\"a\":}",
      "{\"a\":1,}",
      "{a:1}",
      "[01]",
      "[1.]",
      "[.5]",
      "[1e]",
      "[-]",
      "\"abc",
      "\"a\\x\"",
      "\"\\u12\"",
      "\"\\ud800\"",
      "\"\\udc00\"",
      "tru",
      "nul",
      "[true false]",
      "{\"a\":1 \"b\":2}",
      "\"\x01\"",
      "[1]]",
      "{} {}",
      "[\"\\",
  };
  for (const char* d : bad) {
    EXPECT_FALSE(json::accept(d)) << "test input should be invalid: " << d;
    json mine;
    std::string err;
    EXPECT_FALSE(parse_doc(d, mine, &err)) << d;
    EXPECT_FALSE(err.empty()) << d;
  }
}

// The same faults with a long document after them, where the inline paths of next_member() (a
// member or the closing brace, when 19 bytes remain) read them.
TEST(JsonReader, RejectsWhatNlohmannRejectsWithALongTail) {
  const std::string tail = ",\"padding-padding-padding\",[1,2,3,4,5,6,7,8,9]]";
  const char* bad[] = {
      "{\"a\"}",           "{\"a\":}",           "{\"a\":1,}",       "{a:1}",
      "{\"a\":1 \"b\":2}", "{\"a\":1,,\"b\":2}", "{,\"a\":1}",       "{\"a\";1}",
      "{\"a\"  1}",        "{\"a\":1]",          "{\"a\\x\":1}",     "{\"\x01\":1}",
      "{\"a\":1}}",        "{\"a\":1,\"b\"}",    "{\"a\":1,\"b\":}", "{\"a\":1\"b\":2}",
  };
  for (const char* d : bad) {
    std::string doc = "[" + std::string(d) + tail;
    EXPECT_FALSE(json::accept(doc)) << "test input should be invalid: " << doc;
    json mine;
    std::string err;
    EXPECT_FALSE(parse_doc(doc, mine, &err)) << doc;
    EXPECT_FALSE(err.empty()) << doc;
  }
}

TEST(JsonReader, ErrorsNameOffsetAndReason) {
  JsonReader r(R"({"a":1,"b" 2})", 1000);
  ASSERT_TRUE(r.enter_object());
  std::string_view k;
  ASSERT_TRUE(r.next_member(k));
  int64_t v = 0;
  ASSERT_TRUE(r.i64(v));
  EXPECT_FALSE(r.next_member(k));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_offset(), 1000u + 11);
  EXPECT_EQ(r.error_message(), "offset 1011: expected ':' after object key");
  // Once failed, everything fails.
  EXPECT_FALSE(r.skip());
  EXPECT_EQ(r.peek(), JsonReader::Kind::kError);
}

TEST(JsonReader, IntegersAreRangeChecked) {
  uint64_t u = 0;
  int64_t i = 0;
  EXPECT_TRUE(JsonReader("18446744073709551615").u64(u));
  EXPECT_EQ(u, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(JsonReader("18446744073709551616").u64(u));
  EXPECT_FALSE(JsonReader("-1").u64(u));
  EXPECT_TRUE(JsonReader("-9223372036854775808").i64(i));
  EXPECT_EQ(i, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(JsonReader("9223372036854775808").i64(i));
  EXPECT_FALSE(JsonReader("1.5").i64(i));
  EXPECT_FALSE(JsonReader("1e3").u64(u));
  double d = 0;
  EXPECT_TRUE(JsonReader("1e3").f64(d));
  EXPECT_EQ(d, 1000.0);
  EXPECT_FALSE(JsonReader("1e999").f64(d));
}

// Integers of up to 18 digits are read in one pass; every other number takes the general path.
// Around that boundary, with signs, leading zeros and every kind of tail, u64() and i64() accept
// exactly the JSON integers that fit, with nlohmann's value.
TEST(JsonReader, IntegersAgreeWithNlohmannAroundTheFastPath) {
  std::mt19937_64 rng(99);
  std::vector<std::string> texts;
  for (size_t digits = 1; digits <= 21; ++digits) {
    for (const char* sign : {"", "-"}) {
      for (const char* tail : {"", ".5", "e3", "E-1", "0", "x"}) {
        std::string d;
        for (size_t i = 0; i < digits; ++i) d += static_cast<char>('0' + rng() % 10);
        texts.push_back(sign + d + tail);
        texts.push_back(sign + std::string(digits, '9') + tail);
        texts.push_back(sign + std::string("1") + std::string(digits - 1, '0') + tail);
      }
    }
  }
  for (const char* t :
       {"0", "-0", "00", "-00", "01", "18446744073709551615", "18446744073709551616",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "999999999999999999", "1000000000000000000"}) {
    texts.emplace_back(t);
  }
  for (const std::string& t : texts) {
    std::string doc = "[" + t + "]";
    bool valid = json::accept(doc);
    json j = valid ? json::parse(doc)[0] : json();
    bool is_int = valid && (j.is_number_integer() || j.is_number_unsigned());
    bool fits_u64 = is_int && t[0] != '-';
    bool fits_i64 = is_int && (j.is_number_integer() &&
                               !(j.is_number_unsigned() && j.get<uint64_t>() > INT64_MAX));
    uint64_t u = 0;
    int64_t i = 0;
    JsonReader ru(doc), ri(doc);
    bool got_u = ru.enter_array() && ru.next_element() && ru.u64(u) && !ru.next_element() &&
                 ru.ok() && ru.at_end();
    bool got_i = ri.enter_array() && ri.next_element() && ri.i64(i) && !ri.next_element() &&
                 ri.ok() && ri.at_end();
    EXPECT_EQ(got_u, fits_u64) << t;
    EXPECT_EQ(got_i, fits_i64) << t;
    if (got_u && fits_u64) EXPECT_EQ(u, j.get<uint64_t>()) << t;
    if (got_i && fits_i64) EXPECT_EQ(i, j.get<int64_t>()) << t;
  }
}

TEST(JsonReader, UnreadValuesAreSkipped) {
  JsonReader r(R"({"skip":{"x":[1,{"y":"z"}]},"also":[1,2],"want":"yes","tail":null})");
  ASSERT_TRUE(r.enter_object());
  std::string_view k;
  std::string want;
  int members = 0;
  while (r.next_member(k)) {
    ++members;
    if (k == "want") {
      ASSERT_TRUE(r.string(want));
    }
  }
  EXPECT_TRUE(r.ok()) << r.error_message();
  EXPECT_EQ(members, 4);
  EXPECT_EQ(want, "yes");
  EXPECT_TRUE(r.at_end());
}

TEST(JsonReader, RawKeepsExactText) {
  JsonReader r(R"({"a": {"b" : [1, 2.5]} , "c":"d"})");
  ASSERT_TRUE(r.enter_object());
  std::string_view k, raw;
  ASSERT_TRUE(r.next_member(k));
  ASSERT_TRUE(r.raw(raw));
  EXPECT_EQ(raw, R"({"b" : [1, 2.5]})");
  ASSERT_TRUE(r.next_member(k));
  EXPECT_EQ(k, "c");
}

TEST(JsonReader, KeysWithEscapesSurviveTheirValue) {
  JsonReader r(R"({"k\u0041":"v\u0042"})");
  ASSERT_TRUE(r.enter_object());
  std::string_view k, v;
  ASSERT_TRUE(r.next_member(k));
  ASSERT_TRUE(r.string(v));
  EXPECT_EQ(k, "kA");
  EXPECT_EQ(v, "vB");
}

// Found by trace_reader_fuzzer: an unknown member kept with raw() kept a key whose bytes the
// escaped keys inside its own value had overwritten.
TEST(JsonReader, KeysWithEscapesSurviveEscapedKeysInsideTheirValue) {
  JsonReader r(R"({"k\u0041":{"a\n":{"b\t":1},"c\r":[{"d\f":2}]},"e\u0042":3})");
  ASSERT_TRUE(r.enter_object());
  std::string_view k, raw;
  ASSERT_TRUE(r.next_member(k));
  ASSERT_TRUE(r.raw(raw));
  EXPECT_EQ(k, "kA");
  ASSERT_TRUE(r.next_member(k));
  EXPECT_EQ(k, "eB");
  JsonReader w(R"({"k\u0041":{"a\n":1,"c\r":2},"z":0})");
  ASSERT_TRUE(w.enter_object());
  ASSERT_TRUE(w.next_member(k));
  ASSERT_TRUE(w.enter_object());
  std::string_view inner;
  while (w.next_member(inner)) w.skip();
  EXPECT_EQ(k, "kA");
}

TEST(JsonReader, ByteEscapesInvertJsonEscapeTo) {
  std::string s;
  ASSERT_TRUE(JsonReader(R"("\u00e9\u00ff")", 0, true).string(s));
  EXPECT_EQ(s, "\xe9\xff");
  ASSERT_TRUE(JsonReader(R"("\u00e9")", 0, false).string(s));
  EXPECT_EQ(s, "\xc3\xa9");
}

TEST(JsonReader, DepthIsBounded) {
  std::string deep(JsonReader::kMaxDepth, '[');
  deep += std::string(JsonReader::kMaxDepth, ']');
  json t;
  EXPECT_TRUE(parse_doc(deep, t));
  std::string deeper(JsonReader::kMaxDepth + 1, '[');
  deeper += std::string(JsonReader::kMaxDepth + 1, ']');
  std::string err;
  EXPECT_FALSE(parse_doc(deeper, t, &err));
  EXPECT_NE(err.find("nested too deeply"), std::string::npos) << err;
}

// Keys are read 16 bytes at a time when they are short and plain: every length around that
// window, with an escape or the closing quote at every place, must read as nlohmann reads it.
TEST(JsonReader, KeysOfEveryLengthAndShape) {
  for (size_t len = 0; len <= 40; ++len) {
    std::vector<std::string> keys = {std::string(len, 'k')};
    for (size_t at = 0; at < len; ++at) {
      std::string esc(len, 'k'), uni(len, 'k');
      esc.replace(at, 1, "\\\"");
      uni.replace(at, 1, "\\u00e9");
      keys.push_back(esc);
      keys.push_back(uni);
    }
    for (const std::string& k : keys) {
      for (const std::string& text :
           {"{\"" + k + "\":1,\"" + k + "x\":[2]}", "{\"" + k + "\":1}", "{ \"" + k + "\" :1}"}) {
        json mine;
        std::string err;
        ASSERT_TRUE(parse_doc(text, mine, &err)) << text << ": " << err;
        EXPECT_EQ(mine, json::parse(text)) << text;
      }
    }
  }
}

// packed_key() is short_key() of every key, read with one load or not, at every distance from
// the end of the text and from escaped keys (decoded into the reader's own buffer).
TEST(JsonReader, PackedKeysAreShortKeys) {
  for (size_t len = 0; len <= 9; ++len) {
    for (const std::string& k : {std::string(len, 'k'), std::string(len, 'k') + "\\u00e9"}) {
      for (size_t pad = 0; pad <= 10; ++pad) {
        std::string text = "{\"" + k + "\":1,\"" + k + "\":" + std::string(pad, '1') + "2}";
        JsonReader r(text);
        ASSERT_TRUE(r.enter_object());
        std::string_view key;
        int n = 0;
        while (r.next_member(key)) {
          EXPECT_EQ(r.packed_key(key), short_key(key)) << text;
          ++n;
        }
        EXPECT_TRUE(r.ok() && r.at_end()) << text;
        EXPECT_EQ(n, 2) << text;
      }
    }
  }
}

// small_hex_u64() reads exactly the strings "0x" + 1..16 lower-case hex digits, with the value
// parse_u64 gives them, and leaves everything else (unread) to the general path.
TEST(JsonReader, SmallHexStringsAreReadAsParseU64ReadsThem) {
  std::vector<std::string> hex = {"0x0",
                                  "0x1",
                                  "0xf",
                                  "0xc020462a",
                                  "0x7ffe9e9e37a0",
                                  "0xffffffffffffffff",
                                  "0x0000000000000001"};
  std::vector<std::string> other = {"0x",
                                    "0X1",
                                    "0xF",
                                    "0x1g",
                                    "0x-1",
                                    "0x 1",
                                    "1",
                                    "",
                                    "0x1ffffffffffffffff",
                                    "0x00000000000000001",
                                    "0x\\u0031"};
  for (const std::string& s : hex) {
    for (const std::string& after : {std::string(), std::string(",1]")}) {
      std::string text = "\"" + s + "\"" + after;
      JsonReader r(text);
      uint64_t v = 0;
      ASSERT_TRUE(r.small_hex_u64(v)) << text;
      EXPECT_EQ(v, *parse_u64(s, true)) << text;
      EXPECT_EQ(r.offset(), s.size() + 2) << text;
    }
  }
  for (const std::string& s : other) {
    std::string text = "\"" + s + "\",1]";
    JsonReader r(text);
    uint64_t v = 7;
    EXPECT_FALSE(r.small_hex_u64(v)) << text;
    EXPECT_EQ(v, 7u) << text;
    EXPECT_EQ(r.offset(), 0u) << text;
    std::string_view read;
    EXPECT_TRUE(r.string(read)) << text;  // nothing consumed: the string is still there
  }
  uint64_t v = 0;
  for (const char* cut : {"\"0x1", "\"0x", "\"0"}) EXPECT_FALSE(JsonReader(cut).small_hex_u64(v));
}

TEST(JsonReader, NeverReadsPastTheView) {
  // The view ends inside a longer buffer; the bytes after it must not be seen.
  std::string buf = R"({"a":"bcdefghijklmnop"})";
  for (size_t n = 0; n < buf.size(); ++n) {
    JsonReader r(std::string_view(buf.data(), n));
    json t;
    EXPECT_FALSE(to_tree(r, t) && r.at_end()) << n;
  }
}

}  // namespace
}  // namespace cudatool
