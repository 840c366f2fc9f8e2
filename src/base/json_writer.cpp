#include "base/json_writer.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

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

}  // namespace

void json_escape_to(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  // Fast path: most strings (names, keys) need no escaping and are copied in one piece.
  size_t first = 0;
#if defined(__x86_64__)
  // 16 bytes at a time to the first byte that needs escaping: < 0x20, '"', '\\', >= 0x7f.
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i k1f = _mm_set1_epi8(0x1f), k7f = _mm_set1_epi8(0x7f);
  while (s.size() - first >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + first));
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                               _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, k1f), v),    // v <= 0x1f
                                            _mm_cmpeq_epi8(_mm_max_epu8(v, k7f), v)));  // v >= 0x7f
    int mask = _mm_movemask_epi8(hit);
    if (mask != 0) {
      first += static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
      break;
    }
    first += 16;
  }
#endif
  while (first < s.size() && !kNeedsEscape[static_cast<unsigned char>(s[first])]) ++first;
  out.push_back('"');
  if (first == s.size()) {
    out.append(s.data(), s.size());
    out.push_back('"');
    return;
  }
  size_t run = 0;  // start of the pending run of bytes that need no escaping
  for (size_t i = first; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (!kNeedsEscape[c]) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        // Written as code points U+0000..U+00FF so the output is valid JSON and keeps the byte.
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

void JsonWriter::newline_indent() {
  out_.push_back('\n');
  out_.append(has_elem_.size() * 2, ' ');
}

void JsonWriter::before_element() {
  if (has_elem_.empty()) return;
  if (has_elem_.back() != 0) out_.push_back(',');
  has_elem_.back() = 1;
  if (pretty_) newline_indent();
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  has_elem_.push_back(0);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  bool had = !has_elem_.empty() && has_elem_.back() != 0;
  if (!has_elem_.empty()) has_elem_.pop_back();
  if (pretty_ && had) newline_indent();
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  has_elem_.push_back(0);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  bool had = !has_elem_.empty() && has_elem_.back() != 0;
  if (!has_elem_.empty()) has_elem_.pop_back();
  if (pretty_ && had) newline_indent();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  // Keys are short names that need no escaping: the ',', the quoted key and its ':' in one append
  // (the general path was a fifth of `decode --json`).
  if (!pretty_ && k.size() <= 32 && !after_key_ && !has_elem_.empty()) {
    bool clean = true;
    for (char c : k) clean &= !kNeedsEscape[static_cast<unsigned char>(c)];
    if (clean) {
      char buf[36];
      size_t n = 0;
      if (has_elem_.back() != 0) buf[n++] = ',';
      has_elem_.back() = 1;
      buf[n++] = '"';
      std::memcpy(buf + n, k.data(), k.size());
      n += k.size();
      buf[n++] = '"';
      buf[n++] = ':';
      out_.append(buf, n);
      after_key_ = true;
      return *this;
    }
  }
  before_value();
  after_key_ = true;
  json_escape_to(out_, k);
  out_ += pretty_ ? ": " : ":";
  return *this;
}

JsonWriter& JsonWriter::key(JsonKey k) {
  if (pretty_ || after_key_ || has_elem_.empty()) return key(k.name());
  size_t skip = has_elem_.back() != 0 ? 0 : 1;  // the comma
  has_elem_.back() = 1;
  out_.append(k.rendered + skip, k.size - skip);
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  json_escape_to(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::value(long v) {
  before_value();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(unsigned long v) {
  before_value();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  before_value();
  if (!std::isfinite(v)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%.6g", v);
  out_.append(buf, static_cast<size_t>(n));
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::hex(uint64_t v) {
  before_value();
  char buf[24] = {'"', '0', 'x'};
  auto r = std::to_chars(buf + 3, buf + sizeof buf - 1, v, 16);
  *r.ptr = '"';
  out_.append(buf, r.ptr + 1);
  return *this;
}

JsonWriter& JsonWriter::hex_bytes(const uint8_t* p, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  before_value();
  out_.push_back('"');
  size_t at = out_.size();
  out_.resize(at + 2 * n);
  for (size_t i = 0; i < n; ++i) {
    out_[at + 2 * i] = kHex[p[i] >> 4];
    out_[at + 2 * i + 1] = kHex[p[i] & 15];
  }
  out_.push_back('"');
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_.append(json);
  return *this;
}

}  // namespace cudatool
