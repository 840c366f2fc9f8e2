// A small streaming JSON writer for every --json output and for trace files.
//
// Field-name conventions (docs/json.md): addresses and file offsets are strings "0x…" (exact,
// and what a reader greps for); sizes and counts are numbers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/text_stage.hpp"

namespace cudatool {

// A member name fixed when the program is compiled, kept rendered with its comma (`,"seq":`) so
// that a compact writer copies it in one piece: `w.kv("seq"_key, n)` (using namespace
// cudatool::json_literals). For the keys of the hot paths (decode --json writes ~30 per event);
// a plain string key is checked for escapes and assembled on every call.
struct JsonKey {
  const char* rendered;  // ,"name": followed by zeros up to at least kCopy + 1 bytes
  size_t size;           // of ,"name":
  // A writer copies this many bytes at once (a fixed-size copy) when the rendered key fits.
  static constexpr size_t kCopy = 48;
  [[nodiscard]] std::string_view name() const { return {rendered + 2, size - 4}; }
};

namespace json_literals {

template <size_t N>
struct JsonKeyText {
  // N counts the literal's NUL: ',' '"' name '"' ':', then zeros, so that a fixed-size copy of
  // JsonKey::kCopy bytes from either start stays inside.
  static constexpr size_t kSize = N + 3;
  char text[kSize > JsonKey::kCopy ? kSize : JsonKey::kCopy + 1] = {};
  // A name that needs escaping, or an empty one, does not compile (the throw is not constant).
  consteval JsonKeyText(const char (&name)[N]) {  // NOLINT(google-explicit-constructor)
    if (N < 2) throw "an empty JSON key";
    text[0] = ',';
    text[1] = '"';
    for (size_t i = 0; i + 1 < N; ++i) {
      auto c = static_cast<unsigned char>(name[i]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f) throw "a JSON key that needs escaping";
      text[2 + i] = name[i];
    }
    text[N + 1] = '"';
    text[N + 2] = ':';
  }
};

template <JsonKeyText T>
constexpr JsonKey operator""_key() {
  return {T.text, T.kSize};
}

}  // namespace json_literals

class JsonWriter {
 public:
  // How the text reaches `out`. kDirect: after every call out holds all that was written.
  // kStaged: pieces gather in the writer's buffer and reach out when a top-level value ends, at
  // finish(), and when the writer is destroyed; for a writer that writes one document after
  // another (decode --json's event lines) to an `out` that nothing else writes to while a
  // document is open. Either way each piece is written through an inline cursor, not appended to
  // the string one call at a time.
  enum class Mode : uint8_t { kDirect, kStaged };

  // pretty: two-space indentation (human-facing --json); compact: one line (JSON lines).
  explicit JsonWriter(std::string& out, bool pretty = true, Mode mode = Mode::kDirect);
  ~JsonWriter() { flush(); }
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  // Inline: the common case (staged, compact, inside an object, room left) is one fixed-size
  // copy.
  JsonWriter& key(JsonKey k) {
    if (direct_ || pretty_ || after_key_ || has_elem_.empty() || k.size > JsonKey::kCopy ||
        text_.left() < JsonKey::kCopy) {
      return key_slow(k);
    }
    size_t skip = has_elem_.back() != 0 ? 0 : 1;  // the comma
    has_elem_.back() = 1;
    char* p = text_.cursor();
    std::memcpy(p, k.rendered + skip, JsonKey::kCopy);  // padding included
    text_.set_cursor(p + k.size - skip);
    after_key_ = true;
    return *this;  // a key is never a whole document: nothing to hand on yet
  }

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(int v) { return value(static_cast<long>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<unsigned long>(v)); }
  JsonWriter& value(unsigned short v) { return value(static_cast<unsigned long>(v)); }
  JsonWriter& value(unsigned char v) { return value(static_cast<unsigned long>(v)); }
  JsonWriter& value(long long v) { return value(static_cast<long>(v)); }
  JsonWriter& value(unsigned long long v) { return value(static_cast<unsigned long>(v)); }
  JsonWriter& value(long v);           // int64_t on LP64
  JsonWriter& value(unsigned long v);  // uint64_t on LP64
  JsonWriter& value(double v);
  JsonWriter& null();
  // "0x1a2b": addresses, offsets, handles.
  JsonWriter& hex(uint64_t v);
  // Lower-case hex digits of a byte string, no prefix: argument buffers.
  JsonWriter& hex_bytes(const uint8_t* p, size_t n);
  // Inserts already-serialised JSON as a value.
  JsonWriter& raw(std::string_view json);

  // K: a std::string_view or a JsonKey ("name"_key).
  template <class K, class T>
  JsonWriter& kv(const K& k, const T& v) {
    key(k);
    return value(v);
  }
  // k: v, or k: null when v is empty (an absent version, library, name).
  template <class K>
  JsonWriter& kv_or_null(const K& k, std::string_view v) {
    key(k);
    return v.empty() ? null() : value(v);
  }
  template <class K>
  JsonWriter& kv_hex(const K& k, uint64_t v) {
    key(k);
    return hex(v);
  }

  // Ends a top-level document with a newline.
  void finish() {
    text_.put('\n');
    flush();
  }
  // Moves what is staged to out (kStaged; kDirect writers have nothing staged between calls).
  void flush() { text_.flush(); }

 private:
  // The end of every public call: a kDirect writer hands its bytes to out now, a kStaged one when
  // the top-level value is complete.
  JsonWriter& done() {
    if (direct_ || has_elem_.empty()) flush();
    return *this;
  }
  JsonWriter& key_slow(JsonKey k);
  void escape_into(std::string_view s);

  // A value after its key needs nothing (inline: called for every value); an array element or
  // a member's key needs its ',' (before_element).
  void before_value() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    before_element();
  }
  void before_element();
  void newline_indent();

  bool pretty_;
  bool direct_;
  TextStage text_;
  // One entry per open container: 1 when it already holds an element. (Bytes, not
  // vector<bool>: this is on the hot path of every value written.)
  std::vector<uint8_t> has_elem_;
  bool after_key_ = false;
};

// Appends s to out as a JSON string literal (with quotes).
void json_escape_to(std::string& out, std::string_view s);

}  // namespace cudatool
