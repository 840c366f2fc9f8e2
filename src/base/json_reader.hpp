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
#include <string>
#include <string_view>
#include <vector>

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

  // Kind of the next value (whitespace skipped; nothing consumed). kEnd when only whitespace
  // remains, kError when the next byte cannot start a value or the reader has failed.
  Kind peek();

  // Objects: enter_object() consumes '{'; next_member() returns true with the next key (and
  // consumes the ':'), or false after consuming the closing '}' (or on error). The member's value
  // must then be read (or skip()ped); a value left unread is skipped by the next call.
  bool enter_object();
  bool next_member(std::string_view& key);
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
  bool scan_number(const char*& start, const char*& stop, bool& integer);
  // An integer of at most 18 digits read in one pass (consumed); false, nothing consumed, for
  // anything else (then scan_number decides).
  bool plain_integer(uint64_t& magnitude, bool& negative);
  bool parse_string(std::string_view& out);
  // A member key read in one step when it is short and plain; false (nothing consumed) otherwise.
  bool plain_key(std::string_view& out);
  bool skip_string();

  const char* p_;
  const char* begin_;
  const char* end_;
  uint64_t base_;
  bool byte_escapes_;
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
