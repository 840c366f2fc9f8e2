// A small, fast, bounds-checked JSON pull reader (RFC 8259) for trace files and captures.
//
// The reader walks a borrowed text without building a tree: the caller asks for what it expects
// next (an object, a member key, a string, an integer …) and the reader checks the grammar as it
// goes. Nothing is allocated except when a string holds escapes (decoded into one reused
// buffer). Every failure records the first error with its offset and reason; from then on every
// call fails, so a caller may read a whole record and check ok() once.
//
//   JsonReader r(line);
//   if (!r.enter_object()) …
//   std::string_view key;
//   while (r.next_member(key)) {
//     if (key == "seq") r.u64(seq);
//     else if (key == "path") r.string(path);
//     // a member whose value the caller does not consume is skipped by the next call
//   }
//   if (!r.ok()) report(r.error_message());
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/short_key.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace cudatool {

class JsonReader {
 public:
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kObject, kArray, kEnd, kError };

  // Containers nested deeper than this are an error (the reader is not recursive, but a bound
  // keeps hostile input from costing memory).
  static constexpr int kMaxDepth = 64;

  // `base` is the absolute offset of text[0] (for error messages). With `byte_escapes`,
  // \u0080..\u00ff decode to the single byte 0x80..0xff (the inverse of json_escape_to, which
  // writes non-ASCII bytes of names and paths that way) instead of two UTF-8 bytes.
  explicit JsonReader(std::string_view text, uint64_t base = 0, bool byte_escapes = false)
      : p_(text.data()),
        begin_(text.data()),
        end_(text.data() + text.size()),
        base_(base),
        byte_escapes_(byte_escapes) {}

  // For reading the first line of a longer text: '\n' no longer counts as whitespace, so nothing
  // read can span two lines (a caller that finds the line's end this way checks that the value
  // ends right before a '\n').
  void stop_at_newline() { one_line_ = true; }
  // Where reading stands, from the start of the text.
  [[nodiscard]] size_t position() const { return static_cast<size_t>(p_ - begin_); }

  // Kind of the next value (whitespace skipped; nothing consumed). kEnd when only whitespace
  // remains, kError when the next byte cannot start a value or the reader has failed.
  Kind peek();

  // Objects: enter_object() consumes '{'; next_member() returns true with the next key (and
  // consumes the ':'), or false after consuming the closing '}' (or on error). The member's value
  // must then be read (or skip()ped); a value left unread is skipped by the next call.
  bool enter_object();
  bool next_member(std::string_view& key) {
    // Inline, what is most of every trace line: a member with a short plain key and no
    // whitespace,  "key":  first or  ,"key":  after another, and the object's closing brace
    // (anything else: the general path below).
    if (!value_pending_ && error_ == nullptr && depth_ > 0 && end_ - p_ >= 19) {
      uint64_t bit = 1ULL << (depth_ - 1);
      if ((object_bits_ & bit) != 0) {
        if (*p_ == '}') {
          ++p_;
          --depth_;
          return false;
        }
        bool seen = (seen_bits_ & bit) != 0;
        const char* q = p_ + (seen ? 1 : 0);
        if ((!seen || *p_ == ',') && *q == '"' && plain_key_at(q, key) && *q == ':') {
          p_ = q + 1;
          seen_bits_ |= bit;
          value_pending_ = true;
          return true;
        }
      }
    }
    return next_member_general(key);
  }
  // short_key(key) (base/short_key.hpp) of a key next_member() returned, with one 8-byte load
  // when the text goes on for 8 bytes from the key (it does for all but a line's last few).
  [[nodiscard]] uint64_t packed_key(std::string_view key) const {
    auto at = reinterpret_cast<uintptr_t>(key.data());
    auto begin = reinterpret_cast<uintptr_t>(begin_), end = reinterpret_cast<uintptr_t>(end_);
    if (key.size() > 7 || at < begin || at > end || end - at < 8) {
      return short_key(key);
    }
    uint64_t v = 0;
    std::memcpy(&v, key.data(), 8);
    uint64_t mask = key.empty() ? 0 : ~uint64_t{0} >> (64 - 8 * key.size());
    return (v & mask) | static_cast<uint64_t>(key.size()) << 56;
  }
  // Arrays: enter_array() consumes '['; next_element() returns true when another element
  // follows, false after consuming ']' (or on error).
  bool enter_array();
  bool next_element();

  // Scalars. string(): the decoded text; a view into the input when it has no escapes, else into
  // an internal buffer, valid until the next call.
  bool string(std::string_view& out);
  bool string(std::string& out);
  // A string of hex digits in pairs, decoded to bytes (trace buffers). Found by memchr for the
  // closing quote and decoded in one pass when it holds only hex digits; otherwise read as any
  // string (escapes decoded) and decoded from that. `not_hex` is set (and true returned) when the
  // string is valid JSON but not hex digits in pairs.
  bool hex_string(std::vector<uint8_t>& out, bool& not_hex);
  bool boolean(bool& out);
  bool null();
  // Integers in plain integer syntax (no fraction or exponent), range-checked.
  bool i64(int64_t& out);
  bool u64(uint64_t& out);
  // A non-negative integer of at most 18 digits in plain syntax with no whitespace before it,
  // read inline (most numbers of a trace line); false, nothing consumed, for anything else,
  // which u64() or i64() then reads or rejects.
  bool small_u64(uint64_t& out) {
    bool negative = false;
    if (error_ != nullptr || p_ == end_ || static_cast<unsigned>(*p_ - '0') > 9 ||
        !plain_integer(out, negative)) {
      return false;
    }
    value_pending_ = false;
    return true;
  }
  // A string "0x…" of 1 to 16 lower-case hex digits (how traces write requests and addresses)
  // with no whitespace before it, read inline; false, nothing consumed, for anything else.
  bool small_hex_u64(uint64_t& out) {
    if (error_ != nullptr || end_ - p_ < 5 || p_[0] != '"' || p_[1] != '0' || p_[2] != 'x') {
      return false;
    }
    const char* q = p_ + 3;
    const char* lim = end_ - q > 16 ? q + 16 : end_;
    uint64_t v = 0;
    for (; q != lim; ++q) {
      unsigned d = static_cast<unsigned char>(*q) - unsigned{'0'};
      if (d > 9) {
        d = static_cast<unsigned char>(*q) - unsigned{'a'};
        if (d > 5) break;
        d += 10;
      }
      v = v << 4 | d;
    }
    if (q == p_ + 3 || q == end_ || *q != '"') return false;
    out = v;
    p_ = q + 1;
    value_pending_ = false;
    return true;
  }
  bool f64(double& out);
  // Any value, including containers (bounded by kMaxDepth).
  bool skip();
  // Skips one value and returns its exact text (for keeping fields a reader does not know).
  bool raw(std::string_view& out);

  // True when only whitespace remains (the document is complete).
  bool at_end();

  [[nodiscard]] bool ok() const { return error_ == nullptr; }
  // Offset (absolute: base + position) and reason of the first error.
  [[nodiscard]] uint64_t error_offset() const { return base_ + error_pos_; }
  [[nodiscard]] const char* error_reason() const { return error_ ? error_ : ""; }
  // "offset 12: expected ':' after object key"
  [[nodiscard]] std::string error_message() const;
  // Current position (absolute).
  [[nodiscard]] uint64_t offset() const { return base_ + static_cast<uint64_t>(p_ - begin_); }

 private:
  bool fail(const char* reason);
  bool fail_at(const char* at, const char* reason);
  // Compact JSON (traces) has no whitespace: one comparison, inline.
  void skip_ws() {
    if (p_ != end_ && static_cast<unsigned char>(*p_) > ' ') return;
    skip_ws_slow();
  }
  void skip_ws_slow();
  // Starts reading a value (inline: called for every value); false at the end or after an error.
  bool before_value() {
    if (error_ != nullptr) return false;
    value_pending_ = false;
    skip_ws();
    if (p_ == end_) return fail("unexpected end of input, expected a value");
    return true;
  }
  bool next_member_general(std::string_view& key);
  bool scan_number(const char*& start, const char*& stop, bool& integer);
  // An integer of at most 18 digits read in one pass (consumed); false, nothing consumed, for
  // anything else (then scan_number decides).
  bool plain_integer(uint64_t& magnitude, bool& negative) {
    // No leading zero, and no fraction, exponent or further digit after the digits.
    const char* s = p_;
    negative = s != end_ && *s == '-';
    if (negative) ++s;
    if (s == end_ || !is_digit(*s) || (*s == '0' && end_ - s > 1 && is_digit(s[1]))) return false;
    const char* lim = end_ - s > 18 ? s + 18 : end_;
    uint64_t v = 0;
    const char* q = s;
    while (q != lim && is_digit(*q)) v = v * 10 + static_cast<uint64_t>(*q++ - '0');
    if (q != end_ && (is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E')) return false;
    magnitude = v;
    p_ = q;
    return true;
  }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  bool parse_string(std::string_view& out);
  // A member key at `q` (its opening quote) read in one step when it ends within the next 16
  // bytes without an escape or a control byte (every key a trace holds): `q` moves past its
  // closing quote. False, nothing moved, otherwise; the caller makes sure 17 bytes are there.
  static bool plain_key_at(const char*& q, std::string_view& out) {
#if defined(__x86_64__)
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 1));
    __m128i hit = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
        _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v));
    int mask = _mm_movemask_epi8(hit);
    if (mask == 0) return false;
    int i = __builtin_ctz(static_cast<unsigned>(mask));
    if (q[1 + i] != '"') return false;
    out = std::string_view(q + 1, static_cast<size_t>(i));
    q += i + 2;
    return true;
#else
    (void)q;
    (void)out;
    return false;
#endif
  }
  bool skip_string();

  const char* p_;
  const char* begin_;
  const char* end_;
  uint64_t base_;
  bool byte_escapes_;
  bool one_line_ = false;
  const char* error_ = nullptr;
  uint64_t error_pos_ = 0;
  // Per open container: whether an element/member has been seen (so ',' is expected next).
  uint64_t seen_bits_ = 0;
  // Per open container: 1 = object, 0 = array.
  uint64_t object_bits_ = 0;
  int depth_ = 0;
  // A member key (or array element) has been announced and its value not read yet.
  bool value_pending_ = false;
  std::string scratch_;
  // Escaped keys, decoded: [d] holds the current key of the object open at depth d.
  std::vector<std::string> key_scratch_;
};

}  // namespace cudatool
