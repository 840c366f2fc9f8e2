// Internal to src/trace/trace_json*.cpp: the line writer and the line parser that the event lines
// (trace_json.cpp) and the header, trailer and module lines (trace_json_records.cpp) share.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"
#include "base/hex.hpp"
#include "base/json_reader.hpp"
#include "base/json_writer.hpp"
#include "trace/event.hpp"

namespace cudatool::trace::json_line {

inline void write_extra(JsonWriter& w, const std::vector<ExtraField>& extra) {
  for (const auto& x : extra) w.key(x.key).raw(x.json);
}

inline void write_string_or_null(JsonWriter& w, std::string_view key, const std::string& v) {
  w.key(key);
  if (v.empty()) {
    w.null();
  } else {
    w.value(v);
  }
}
// Event lines are the bulk of every trace: written with direct appends (member names are
// literals that need no escaping) rather than the general JsonWriter.
class Line {
 public:
  explicit Line(std::string& out) : out_(out) {}
  // ,"name":  (the first member of an object has no comma)
  void key(std::string_view k, bool first = false) {
    if (!first) out_.push_back(',');
    out_.push_back('"');
    out_.append(k);
    out_.append("\":", 2);
  }
  void num(uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void num(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void hex(uint64_t v) {
    char buf[24] = {'"', '0', 'x'};
    auto r = std::to_chars(buf + 3, buf + sizeof buf - 1, v, 16);
    *r.ptr = '"';
    out_.append(buf, r.ptr + 1);
  }
  void str(std::string_view s) { json_escape_to(out_, s); }
  // A member and its value: "k":… written by num, hex, str, bytes or hex_list.
  void key_num(std::string_view k, uint64_t v) {
    key(k);
    num(v);
  }
  void key_num(std::string_view k, int64_t v) {
    key(k);
    num(v);
  }
  void key_hex(std::string_view k, uint64_t v) {
    key(k);
    hex(v);
  }
  void key_str(std::string_view k, std::string_view s) {
    key(k);
    str(s);
  }
  // ["0x…",…]: a call stack's frames (an event's and a stack record's)
  void hex_list(const std::vector<uint64_t>& v) {
    out_.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out_.push_back(',');
      hex(v[i]);
    }
    out_.push_back(']');
  }
  void bytes(const std::vector<uint8_t>& b) {
    size_t at = out_.size();
    out_.resize(at + 2 * b.size() + 2);
    char* p = out_.data() + at;
    p[0] = '"';
    encode_hex_into(b.data(), b.size(), p + 1);
    p[2 * b.size() + 1] = '"';
  }
  void raw(std::string_view s) { out_.append(s); }
  void ch(char c) { out_.push_back(c); }
  void extra(const std::vector<ExtraField>& x) {
    for (const auto& f : x) {
      out_.push_back(',');
      json_escape_to(out_, f.key);
      out_.push_back(':');
      out_.append(f.json);
    }
  }

 private:
  std::string& out_;
};

// The parse state of one line: the pull reader plus the first field-level error.
class LineParser {
 public:
  LineParser(std::string_view line, uint64_t offset) : line_(line), r_(line, offset, true) {}

  JsonReader& r() { return r_; }

  // A numeric field: a JSON number, or a string "0x…" (hex) / decimal, as the capture format and
  // older tools write them.
  bool u64(uint64_t& v) {
    if (r_.small_u64(v) || r_.small_hex_u64(v)) return true;
    if (r_.peek() == JsonReader::Kind::kString) {
      std::string_view s;
      if (!r_.string(s)) return false;
      auto x = parse_u64(s, true);
      if (!x) return bad("expected a number or a \"0x…\" string");
      v = *x;
      return true;
    }
    return r_.u64(v);
  }
  bool i64(int64_t& v) {
    uint64_t small = 0;
    if (r_.small_u64(small) || r_.small_hex_u64(small)) {  // as u64() reads it
      v = static_cast<int64_t>(small);
      return true;
    }
    if (r_.peek() == JsonReader::Kind::kString) {
      uint64_t u = 0;
      if (!u64(u)) return false;
      v = static_cast<int64_t>(u);
      return true;
    }
    return r_.i64(v);
  }
  bool i32(int32_t& v) {
    int64_t x = 0;
    if (!i64(x)) return false;
    if (x < INT32_MIN || x > INT32_MAX) return bad("out of the range of a 32-bit integer");
    v = static_cast<int32_t>(x);
    return true;
  }
  bool str(std::string& v) {
    if (r_.peek() == JsonReader::Kind::kNull) {
      v.clear();
      return r_.null();
    }
    return r_.string(v);
  }
  // An array of numbers (u64 each), appended to v: a call stack's frames.
  bool u64_list(std::vector<uint64_t>& v) {
    if (!r_.enter_array()) return false;
    while (r_.next_element()) {
      uint64_t a = 0;
      if (!u64(a)) return false;
      v.push_back(a);
    }
    return r_.ok();
  }
  bool hex(std::vector<uint8_t>& v) {
    bool not_hex = false;
    if (!r_.hex_string(v, not_hex)) return false;
    if (not_hex) return bad("expected hex digits in pairs");
    return true;
  }
  bool extra(std::vector<ExtraField>& out, std::string_view key) {
    std::string_view raw;
    if (!r_.raw(raw)) return false;
    out.push_back({std::string(key), std::string(raw)});
    return true;
  }
  bool bad(const char* reason) {
    if (field_reason_ == nullptr) {
      field_reason_ = reason;
      field_offset_ = r_.offset();
    }
    return false;
  }
  // The member being read, for errors: `buffer` -1 for a member of "arg", i >= 0 for one of
  // "nested[i]". A plain key is a view into the line; a key with escapes is decoded into the
  // reader's buffer for its depth, which the next escaped key there reuses even when reading it
  // then fails (the error is the last member's): that one is copied.
  void set_field(std::string_view k, int buffer = -2) {
    if (field_reason_ == nullptr && r_.ok()) {
      auto at = reinterpret_cast<uintptr_t>(k.data());
      auto begin = reinterpret_cast<uintptr_t>(line_.data());
      if (at >= begin && at - begin <= line_.size() && k.size() <= line_.size() - (at - begin)) {
        key_ = k;
      } else {
        key_copy_.assign(k);
        key_ = key_copy_;
      }
      buffer_ = buffer;
    }
  }
  std::string field_name() const {
    if (buffer_ == -2) return std::string(key_);
    std::string prefix = buffer_ == -1   ? "arg."
                         : buffer_ == -3 ? "content."
                                         : "nested[" + std::to_string(buffer_) + "].";
    return prefix + std::string(key_);
  }

  // Read to here without an error (the text after it not looked at).
  [[nodiscard]] bool clean() const { return r_.ok() && field_reason_ == nullptr; }
  Status finish() {
    if (r_.ok() && field_reason_ == nullptr && !r_.at_end()) {
      return make_error("", "", r_.offset(), "characters after the JSON object");
    }
    if (!r_.ok()) return make_error("", field_name(), r_.error_offset(), r_.error_reason());
    if (field_reason_ != nullptr) return make_error("", field_name(), field_offset_, field_reason_);
    return Status::success();
  }

 private:
  std::string_view line_;
  JsonReader r_;
  std::string_view key_;
  std::string key_copy_;  // key_'s bytes when they are not the line's (set_field)
  int buffer_ = -2;
  const char* field_reason_ = nullptr;
  uint64_t field_offset_ = 0;
};

}  // namespace cudatool::trace::json_line
