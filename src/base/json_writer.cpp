#include "base/json_writer.hpp"

#include "base/hex.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace cudatool {

namespace {

// Bytes that cannot appear raw in a JSON string as we write it: control bytes, '"', '\\', DEL,
// and bytes >= 0x80 (names from binaries are not guaranteed UTF-8).
constexpr std::array<bool, 256> make_escape_table() {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = c < 0x20 || c == '"' || c == '\\' || c >= 0x7f;
  return t;
}
constexpr std::array<bool, 256> kNeedsEscape = make_escape_table();

constexpr size_t kStageSize = 16384;

// Bytes of a 16-byte block that need escaping, as a bit mask.
#if defined(__x86_64__)
int escape_mask(__m128i v) {
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i k1f = _mm_set1_epi8(0x1f), k7f = _mm_set1_epi8(0x7f);
  __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                             _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, k1f), v),    // v <= 0x1f
                                          _mm_cmpeq_epi8(_mm_max_epu8(v, k7f), v)));  // v >= 0x7f
  return _mm_movemask_epi8(hit);
}
#endif

// Writes s escaped at p (room for 6 bytes per byte of s); returns the end.
char* escape_bytes(char* p, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (!kNeedsEscape[c]) {
      *p++ = ch;
      continue;
    }
    *p++ = '\\';
    switch (c) {
      case '"':
      case '\\':
        *p++ = ch;
        break;
      case '\n':
        *p++ = 'n';
        break;
      case '\r':
        *p++ = 'r';
        break;
      case '\t':
        *p++ = 't';
        break;
      default:
        // Written as code points U+0000..U+00FF so the output is valid JSON and keeps the byte.
        p = std::copy_n("u00", 3, p);
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 15];
    }
  }
  return p;
}

#if defined(__x86_64__)
// The 16 bytes at p, which may run past the end of the object p points into, but not into
// another page (the caller checks): a string's short tail in one load. Not instrumented: the
// bytes past the end are loaded and ignored.
__attribute__((no_sanitize("address"))) __m128i load_within_page(const char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
#endif

// How many bytes at the start of s need no escaping: 16 bytes a load, and a short tail in one
// more load when it does not end within 16 bytes of a page's end (most strings are names). With
// kCopy, the blocks are also stored at dst as they are checked (dst has room for s.size() + 16
// bytes); what is beyond the clean prefix there is garbage.
template <bool kCopy>
size_t clean_prefix(std::string_view s, char* dst) {
  size_t i = 0;
#if defined(__x86_64__)
  for (; i + 16 <= s.size(); i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
    if constexpr (kCopy) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), v);
    if (int mask = escape_mask(v); mask != 0) {
      return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
  }
  size_t rest = s.size() - i;
  if (rest > 0 && (reinterpret_cast<uintptr_t>(s.data() + i) & 4095) <= 4096 - 16) {
    __m128i v = load_within_page(s.data() + i);
    if constexpr (kCopy) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), v);
    // The end counts as a stop, for a tail with nothing to escape.
    unsigned mask = static_cast<unsigned>(escape_mask(v)) | (1u << rest);
    return i + static_cast<size_t>(__builtin_ctz(mask));
  }
#endif
  size_t start = i;
  while (i < s.size() && !kNeedsEscape[static_cast<unsigned char>(s[i])]) ++i;
  if constexpr (kCopy) {
    if (i != start) std::memcpy(dst + start, s.data() + start, i - start);
  }
  return i;
}

}  // namespace

void json_escape_to(std::string& out, std::string_view s) {
  size_t first = clean_prefix<false>(s, nullptr);
  out.push_back('"');
  if (first != 0) out.append(s.data(), first);
  if (first < s.size()) {
    size_t at = out.size();
    out.resize(at + 6 * (s.size() - first));
    char* end = escape_bytes(out.data() + at, s.substr(first));
    out.resize(static_cast<size_t>(end - out.data()));
  }
  out.push_back('"');
}

JsonWriter::JsonWriter(std::string& out, bool pretty, Mode mode)
    : pretty_(pretty), direct_(mode == Mode::kDirect), text_(out, direct_ ? 256 : kStageSize) {
  has_elem_.reserve(32);
}

// The string and its quotes at the cursor: the clean prefix copied as it is checked, the rest
// escaped.
void JsonWriter::escape_into(std::string_view s) {
  char* p = text_.room(s.size() + 18);  // the quotes, and the last 16-byte store
  *p++ = '"';
  size_t first = clean_prefix<true>(s, p);
  p += first;
  if (first < s.size()) {
    text_.set_cursor(p);
    p = text_.room(6 * (s.size() - first) + 1);
    p = escape_bytes(p, s.substr(first));
  }
  *p++ = '"';
  text_.set_cursor(p);
}

void JsonWriter::newline_indent() {
  char* p = text_.room(1 + 2 * has_elem_.size());
  *p++ = '\n';
  text_.set_cursor(std::fill_n(p, 2 * has_elem_.size(), ' '));
}

void JsonWriter::before_element() {
  if (has_elem_.empty()) return;
  if (has_elem_.back() != 0) text_.put(',');
  has_elem_.back() = 1;
  if (pretty_) newline_indent();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  text_.put('{');
  has_elem_.push_back(0);
  return done();
}

JsonWriter& JsonWriter::end_object() {
  bool had = !has_elem_.empty() && has_elem_.back() != 0;
  if (!has_elem_.empty()) has_elem_.pop_back();
  if (pretty_ && had) newline_indent();
  text_.put('}');
  return done();
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  text_.put('[');
  has_elem_.push_back(0);
  return done();
}

JsonWriter& JsonWriter::end_array() {
  bool had = !has_elem_.empty() && has_elem_.back() != 0;
  if (!has_elem_.empty()) has_elem_.pop_back();
  if (pretty_ && had) newline_indent();
  text_.put(']');
  return done();
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  after_key_ = true;
  escape_into(k);
  if (pretty_) {
    text_.put(": ", 2);
  } else {
    text_.put(':');
  }
  return done();
}

JsonWriter& JsonWriter::key_slow(JsonKey k) {
  if (pretty_ || after_key_ || has_elem_.empty()) return key(k.name());
  size_t skip = has_elem_.back() != 0 ? 0 : 1;
  has_elem_.back() = 1;
  text_.put(k.rendered + skip, k.size - skip);
  after_key_ = true;
  return done();
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  escape_into(s);
  return done();
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  if (b) {
    text_.put("true", 4);
  } else {
    text_.put("false", 5);
  }
  return done();
}

JsonWriter& JsonWriter::value(long v) {
  before_value();
  char* p = text_.room(24);
  text_.set_cursor(std::to_chars(p, p + 24, v).ptr);
  return done();
}

JsonWriter& JsonWriter::value(unsigned long v) {
  before_value();
  char* p = text_.room(24);
  text_.set_cursor(std::to_chars(p, p + 24, v).ptr);
  return done();
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  if (!std::isfinite(v)) {
    text_.put("null", 4);
    return done();
  }
  char* p = text_.room(32);
  int n = std::snprintf(p, 32, "%.6g", v);
  text_.set_cursor(p + n);
  return done();
}

JsonWriter& JsonWriter::null() {
  before_value();
  text_.put("null", 4);
  return done();
}

JsonWriter& JsonWriter::hex(uint64_t v) {
  before_value();
  char* p = text_.room(24);
  p[0] = '"';
  p[1] = '0';
  p[2] = 'x';
  p = std::to_chars(p + 3, p + 23, v, 16).ptr;
  *p++ = '"';
  text_.set_cursor(p);
  return done();
}

JsonWriter& JsonWriter::hex_bytes(const uint8_t* p, size_t n) {
  before_value();
  char* o = text_.room(2 * n + 2);
  *o++ = '"';
  encode_hex_into(p, n, o);
  o[2 * n] = '"';
  text_.set_cursor(o + 2 * n + 1);
  return done();
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  text_.put(json.data(), json.size());
  return done();
}

}  // namespace cudatool
