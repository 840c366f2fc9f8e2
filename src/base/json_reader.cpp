#include "base/json_reader.hpp"

#include "base/hex.hpp"

#include <charconv>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace cudatool {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// Nonzero when some byte of v is zero / below n (n <= 128): the classic SWAR tests. Used only to
// leave the 8-bytes-at-a-time loop; the exact byte is then found one at a time.
inline uint64_t has_zero(uint64_t v) {
  return (v - kOnes) & ~v & kHighs;
}
inline uint64_t has_less(uint64_t v, uint64_t n) {
  return (v - kOnes * n) & ~v & kHighs;
}

inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace

std::string JsonReader::error_message() const {
  return "offset " + std::to_string(error_offset()) + ": " + error_reason();
}

bool JsonReader::fail(const char* reason) {
  return fail_at(p_, reason);
}

bool JsonReader::fail_at(const char* at, const char* reason) {
  if (error_ == nullptr) {
    error_ = reason;
    error_pos_ = static_cast<uint64_t>(at - begin_);
  }
  return false;
}

void JsonReader::skip_ws_slow() {
  while (p_ != end_ && (*p_ == ' ' || (*p_ == '\n' && !one_line_) || *p_ == '\r' || *p_ == '\t')) {
    ++p_;
  }
}

JsonReader::Kind JsonReader::peek() {
  if (error_ != nullptr) return Kind::kError;
  skip_ws();
  if (p_ == end_) return Kind::kEnd;
  switch (*p_) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
    case 'f':
      return Kind::kBool;
    case 'n':
      return Kind::kNull;
    default:
      return (*p_ == '-' || is_digit(*p_)) ? Kind::kNumber : Kind::kError;
  }
}

bool JsonReader::enter_object() {
  if (!before_value()) return false;
  if (*p_ != '{') return fail("expected '{'");
  if (depth_ >= kMaxDepth) return fail("containers nested too deeply");
  ++p_;
  object_bits_ |= 1ULL << depth_;
  seen_bits_ &= ~(1ULL << depth_);
  ++depth_;
  return true;
}

bool JsonReader::enter_array() {
  if (!before_value()) return false;
  if (*p_ != '[') return fail("expected '['");
  if (depth_ >= kMaxDepth) return fail("containers nested too deeply");
  ++p_;
  object_bits_ &= ~(1ULL << depth_);
  seen_bits_ &= ~(1ULL << depth_);
  ++depth_;
  return true;
}

bool JsonReader::next_member_general(std::string_view& key) {
  if (value_pending_ && !skip()) return false;
  if (error_ != nullptr) return false;
  if (depth_ == 0 || (object_bits_ & (1ULL << (depth_ - 1))) == 0) {
    return fail("member requested outside an object");
  }
  uint64_t bit = 1ULL << (depth_ - 1);
  skip_ws();
  if (p_ == end_) return fail("unexpected end of input inside an object");
  if (*p_ == '}') {
    ++p_;
    --depth_;
    return false;
  }
  if ((seen_bits_ & bit) != 0) {
    if (*p_ != ',') return fail("expected ',' or '}' in object");
    ++p_;
    skip_ws();
    if (p_ == end_) return fail("unexpected end of input inside an object");
  }
  if (*p_ != '"') return fail("expected a string key in object");
  const char* q = p_;
  if (end_ - p_ >= 17 && plain_key_at(q, key)) {
    p_ = q;
  } else if (!parse_string(key)) {
    return false;
  }
  if (key.data() == scratch_.data()) {
    // A key with escapes must survive the reading of its own value, escaped keys inside that
    // value included: one buffer per depth.
    // Sized once: growing the vector would move the strings (and short ones hold their bytes).
    if (key_scratch_.empty()) key_scratch_.resize(kMaxDepth + 1);
    auto d = static_cast<size_t>(depth_);
    key_scratch_[d].assign(scratch_);
    key = key_scratch_[d];
  }
  skip_ws();
  if (p_ == end_ || *p_ != ':') return fail("expected ':' after object key");
  ++p_;
  seen_bits_ |= bit;
  value_pending_ = true;
  return true;
}

bool JsonReader::next_element() {
  if (value_pending_ && !skip()) return false;
  if (error_ != nullptr) return false;
  if (depth_ == 0 || (object_bits_ & (1ULL << (depth_ - 1))) != 0) {
    return fail("element requested outside an array");
  }
  uint64_t bit = 1ULL << (depth_ - 1);
  skip_ws();
  if (p_ == end_) return fail("unexpected end of input inside an array");
  if (*p_ == ']') {
    ++p_;
    --depth_;
    return false;
  }
  if ((seen_bits_ & bit) != 0) {
    if (*p_ != ',') return fail("expected ',' or ']' in array");
    ++p_;
  }
  seen_bits_ |= bit;
  value_pending_ = true;
  return true;
}

bool JsonReader::skip_string() {
  std::string_view ignored;
  return parse_string(ignored);
}

bool JsonReader::parse_string(std::string_view& out) {
  // *p_ == '"'
  const char* start = p_ + 1;
  const char* s = start;
  // Fast scan, 16 (SSE2) or 8 bytes at a time, to the first byte that is '"', '\\' or a control
  // byte. Trace lines are mostly long hex strings: this loop is the reader's inner loop.
  bool stopped = false;
#if defined(__x86_64__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i k1f = _mm_set1_epi8(0x1f);
  while (end_ - s >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                               _mm_cmpeq_epi8(_mm_min_epu8(v, k1f), v));  // v <= 0x1f
    int mask = _mm_movemask_epi8(hit);
    if (mask != 0) {
      s += __builtin_ctz(static_cast<unsigned>(mask));
      stopped = true;
      break;
    }
    s += 16;
  }
#endif
  while (!stopped && end_ - s >= 8) {
    uint64_t v;
    std::memcpy(&v, s, 8);
    if ((has_zero(v ^ (kOnes * '"')) | has_zero(v ^ (kOnes * '\\')) | has_less(v, 0x20)) != 0) {
      break;
    }
    s += 8;
  }
  while (s != end_ && *s != '"' && *s != '\\' && static_cast<unsigned char>(*s) >= 0x20) ++s;
  if (s == end_) return fail_at(p_, "unterminated string");
  if (*s == '"') {
    out = std::string_view(start, static_cast<size_t>(s - start));
    p_ = s + 1;
    return true;
  }
  if (*s != '\\') return fail_at(s, "control character in string");
  // Slow path: decode escapes into scratch_.
  scratch_.assign(start, static_cast<size_t>(s - start));
  while (true) {
    if (s == end_) return fail_at(p_, "unterminated string");
    char c = *s;
    if (c == '"') break;
    if (static_cast<unsigned char>(c) < 0x20) return fail_at(s, "control character in string");
    if (c != '\\') {
      scratch_.push_back(c);
      ++s;
      continue;
    }
    if (end_ - s < 2) return fail_at(s, "unterminated escape");
    char e = s[1];
    s += 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        scratch_.push_back(e);
        break;
      case 'b':
        scratch_.push_back('\b');
        break;
      case 'f':
        scratch_.push_back('\f');
        break;
      case 'n':
        scratch_.push_back('\n');
        break;
      case 'r':
        scratch_.push_back('\r');
        break;
      case 't':
        scratch_.push_back('\t');
        break;
      case 'u': {
        auto read4 = [&](uint32_t& cp) {
          if (end_ - s < 4) return false;
          cp = 0;
          for (int i = 0; i < 4; ++i) {
            int h = hex_value(s[i]);
            if (h < 0) return false;
            cp = cp << 4 | static_cast<uint32_t>(h);
          }
          s += 4;
          return true;
        };
        uint32_t cp = 0;
        if (!read4(cp)) return fail_at(s, "invalid \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t lo = 0;
          if (end_ - s < 2 || s[0] != '\\' || s[1] != 'u') {
            return fail_at(s, "high surrogate without a low surrogate");
          }
          s += 2;
          if (!read4(lo) || lo < 0xdc00 || lo > 0xdfff) {
            return fail_at(s, "high surrogate without a low surrogate");
          }
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp <= 0xdfff) {
          return fail_at(s, "low surrogate without a high surrogate");
        }
        if (byte_escapes_ && cp >= 0x80 && cp <= 0xff) {
          scratch_.push_back(static_cast<char>(cp));
        } else {
          append_utf8(scratch_, cp);
        }
        break;
      }
      default:
        return fail_at(s - 1, "invalid escape in string");
    }
  }
  out = scratch_;
  p_ = s + 1;
  return true;
}

bool JsonReader::string(std::string_view& out) {
  if (!before_value()) return false;
  if (*p_ != '"') return fail("expected a string");
  return parse_string(out);
}

bool JsonReader::hex_string(std::vector<uint8_t>& out, bool& not_hex) {
  not_hex = false;
  if (!before_value()) return false;
  if (*p_ != '"') return fail("expected a string");
  const char* start = p_ + 1;
  const auto* quote =
      static_cast<const char*>(std::memchr(start, '"', static_cast<size_t>(end_ - start)));
  if (quote != nullptr) {
    auto n = static_cast<size_t>(quote - start);
    // Hex digits hold no backslash or control byte: a string that decodes is complete and valid.
    if (n % 2 == 0) {
      out.resize(n / 2);
      if (decode_hex_into(std::string_view(start, n), out.data())) {
        p_ = quote + 1;
        return true;
      }
    }
  }
  std::string_view s;
  if (!parse_string(s)) return false;
  if (s.size() % 2 != 0) {
    not_hex = true;
    return true;
  }
  out.resize(s.size() / 2);
  not_hex = !decode_hex_into(s, out.data());
  return true;
}

bool JsonReader::string(std::string& out) {
  std::string_view v;
  if (!string(v)) return false;
  out.assign(v.data(), v.size());
  return true;
}

bool JsonReader::boolean(bool& out) {
  if (!before_value()) return false;
  if (end_ - p_ >= 4 && std::memcmp(p_, "true", 4) == 0) {
    p_ += 4;
    out = true;
    return true;
  }
  if (end_ - p_ >= 5 && std::memcmp(p_, "false", 5) == 0) {
    p_ += 5;
    out = false;
    return true;
  }
  return fail("expected true or false");
}

bool JsonReader::null() {
  if (!before_value()) return false;
  if (end_ - p_ >= 4 && std::memcmp(p_, "null", 4) == 0) {
    p_ += 4;
    return true;
  }
  return fail("expected null");
}

bool JsonReader::scan_number(const char*& start, const char*& stop, bool& integer) {
  const char* s = p_;
  start = s;
  if (s != end_ && *s == '-') ++s;
  if (s == end_) return fail("invalid number");
  if (*s == '0') {
    ++s;
  } else if (*s >= '1' && *s <= '9') {
    while (s != end_ && is_digit(*s)) ++s;
  } else {
    return fail("invalid number");
  }
  integer = true;
  if (s != end_ && *s == '.') {
    ++s;
    if (s == end_ || !is_digit(*s)) return fail_at(s, "invalid number: digit expected after '.'");
    while (s != end_ && is_digit(*s)) ++s;
    integer = false;
  }
  if (s != end_ && (*s == 'e' || *s == 'E')) {
    ++s;
    if (s != end_ && (*s == '+' || *s == '-')) ++s;
    if (s == end_ || !is_digit(*s)) return fail_at(s, "invalid number: digit expected in exponent");
    while (s != end_ && is_digit(*s)) ++s;
    integer = false;
  }
  stop = s;
  return true;
}

bool JsonReader::i64(int64_t& out) {
  if (!before_value()) return false;
  uint64_t m = 0;
  bool negative = false;
  if (plain_integer(m, negative)) {
    out = negative ? -static_cast<int64_t>(m) : static_cast<int64_t>(m);
    return true;
  }
  const char *a = nullptr, *b = nullptr;
  bool integer = false;
  if (!scan_number(a, b, integer)) return false;
  if (!integer) return fail("expected an integer");
  auto r = std::from_chars(a, b, out);
  if (r.ec != std::errc()) return fail("integer out of the range of int64");
  p_ = b;
  return true;
}

bool JsonReader::u64(uint64_t& out) {
  if (!before_value()) return false;
  const char* at = p_;
  uint64_t m = 0;
  bool negative = false;
  if (plain_integer(m, negative)) {
    if (!negative) {
      out = m;
      return true;
    }
    p_ = at;  // a negative number: the general path below says so
  }
  const char *a = nullptr, *b = nullptr;
  bool integer = false;
  if (!scan_number(a, b, integer)) return false;
  if (!integer) return fail("expected an integer");
  if (*a == '-') return fail("expected a non-negative integer");
  auto r = std::from_chars(a, b, out);
  if (r.ec != std::errc()) return fail("integer out of the range of uint64");
  p_ = b;
  return true;
}

bool JsonReader::f64(double& out) {
  if (!before_value()) return false;
  const char *a = nullptr, *b = nullptr;
  bool integer = false;
  if (!scan_number(a, b, integer)) return false;
  auto r = std::from_chars(a, b, out);
  if (r.ec != std::errc()) return fail("number out of the range of double");
  p_ = b;
  return true;
}

bool JsonReader::skip() {
  switch (peek()) {
    case Kind::kObject: {
      if (!enter_object()) return false;
      std::string_view key;
      while (next_member(key)) {
        if (!skip()) return false;
      }
      return ok();
    }
    case Kind::kArray: {
      if (!enter_array()) return false;
      while (next_element()) {
        if (!skip()) return false;
      }
      return ok();
    }
    case Kind::kString:
      value_pending_ = false;
      return skip_string();
    case Kind::kNumber: {
      value_pending_ = false;
      const char *a = nullptr, *b = nullptr;
      bool integer = false;
      if (!scan_number(a, b, integer)) return false;
      p_ = b;
      return true;
    }
    case Kind::kBool: {
      bool v = false;
      return boolean(v);
    }
    case Kind::kNull:
      return null();
    case Kind::kEnd:
      return fail("unexpected end of input, expected a value");
    case Kind::kError:
      return error_ != nullptr ? false : fail("unexpected character, expected a value");
  }
  return false;
}

bool JsonReader::raw(std::string_view& out) {
  if (!before_value()) return false;
  const char* start = p_;
  if (!skip()) return false;
  out = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

bool JsonReader::at_end() {
  if (error_ != nullptr) return false;
  skip_ws();
  return p_ == end_;
}

}  // namespace cudatool
