// A small streaming JSON writer for every --json output and for trace files.
//
// Field-name conventions (docs/json.md): addresses and file offsets are strings "0x…" (exact,
// and what a reader greps for); sizes and counts are numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudatool {

// A member name fixed when the program is compiled, kept rendered with its comma (`,"seq":`) so
// that a compact writer copies it in one piece: `w.kv("seq"_key, n)` (using namespace
// cudatool::json_literals). For the keys of the hot paths (decode --json writes ~30 per event);
// a plain string key is checked for escapes and assembled on every call.
struct JsonKey {
  const char* rendered;  // ,"name":
  size_t size;
  [[nodiscard]] std::string_view name() const { return {rendered + 2, size - 4}; }
};

namespace json_literals {

template <size_t N>
struct JsonKeyText {
  char text[N + 3] = {};  // N counts the literal's NUL: ',' '"' name '"' ':'
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
  return {T.text, sizeof T.text};
}

}  // namespace json_literals

class JsonWriter {
 public:
  // pretty: two-space indentation (human-facing --json); compact: one line (JSON lines).
  explicit JsonWriter(std::string& out, bool pretty = true) : out_(out), pretty_(pretty) {
    has_elem_.reserve(32);
  }

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& key(JsonKey k);

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
  void finish() { out_.push_back('\n'); }

 private:
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

  std::string& out_;
  bool pretty_;
  // One entry per open container: 1 when it already holds an element. (Bytes, not
  // vector<bool>: this is on the hot path of every value written.)
  std::vector<uint8_t> has_elem_;
  bool after_key_ = false;
};

// Appends s to out as a JSON string literal (with quotes).
void json_escape_to(std::string& out, std::string_view s);

}  // namespace cudatool
