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

  template <class T>
  JsonWriter& kv(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  // k: v, or k: null when v is empty (an absent version, library, name).
  JsonWriter& kv_or_null(std::string_view k, std::string_view v) {
    key(k);
    return v.empty() ? null() : value(v);
  }
  JsonWriter& kv_hex(std::string_view k, uint64_t v) {
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
