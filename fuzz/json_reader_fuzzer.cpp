// Fuzzes the JSON pull reader (src/base/json_reader.hpp): any input, walked as a generic value
// with every accessor (the inline fast paths checked against the general ones), in both escape
// modes. It must never read outside the input, recurse past its depth bound, or accept a
// document and then fail to walk it the same way twice.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/hex.hpp"
#include "base/json_reader.hpp"
#include "base/short_key.hpp"
#include "fuzz_check.hpp"

namespace {

using cudatool::JsonReader;

// Walks one value; returns a digest of what was read (to compare two walks).
uint64_t walk(JsonReader& r, int depth) {
  uint64_t h = static_cast<uint64_t>(r.peek()) + 31;
  switch (r.peek()) {
    case JsonReader::Kind::kObject: {
      if (!r.enter_object()) return h;
      std::string_view k;
      int i = 0;
      while (r.next_member(k)) {
        h = h * 131 + k.size();
        FUZZ_CHECK(r.packed_key(k) == cudatool::short_key(k));
        // Leave every third value unread: the next call must skip it. A key stays valid while
        // its value is read, whatever the value holds.
        const std::string key(k);
        if (++i % 3 != 0) h = h * 131 + walk(r, depth + 1);
        FUZZ_CHECK(k == key);
      }
      return h;
    }
    case JsonReader::Kind::kArray: {
      if (!r.enter_array()) return h;
      int i = 0;
      while (r.next_element()) {
        if (++i % 4 == 0) {
          std::string_view raw;
          if (r.raw(raw)) h = h * 131 + raw.size();
        } else {
          h = h * 131 + walk(r, depth + 1);
        }
      }
      return h;
    }
    case JsonReader::Kind::kString: {
      // A "0x…" string read inline holds the value parse_u64 gives its text, and consumes it.
      JsonReader fast = r, full = r;
      uint64_t x = 0;
      std::string_view text;
      if (fast.small_hex_u64(x)) {
        FUZZ_CHECK(full.string(text) && cudatool::parse_u64(text, true) == x);
        FUZZ_CHECK(full.offset() == fast.offset());
      }
      std::string_view s;
      if (r.string(s)) h = h * 131 + s.size();
      return h;
    }
    case JsonReader::Kind::kNumber: {
      JsonReader probe = r;
      uint64_t u = 0;
      int64_t i = 0;
      double d = 0;
      // An integer read (short ones take a one-pass path) is the value from_chars gives for the
      // number's text, and consumes exactly that text.
      std::string_view text;
      JsonReader whole = r;
      const bool have_text = whole.raw(text);
      auto agrees = [&](auto got) {
        decltype(got) want = 0;
        FUZZ_CHECK(have_text);
        auto rc = std::from_chars(text.data(), text.data() + text.size(), want);
        FUZZ_CHECK(rc.ec == std::errc() && rc.ptr == text.data() + text.size() && want == got);
        FUZZ_CHECK(probe.offset() == whole.offset());
        return h * 131 + static_cast<uint64_t>(got);
      };
      JsonReader fast = r;
      uint64_t small = 0;
      if (fast.small_u64(small)) {  // the inline path: as u64() reads it
        FUZZ_CHECK(probe.u64(u) && u == small && probe.offset() == fast.offset());
        return agrees(u);
      }
      if (probe.u64(u)) return agrees(u);
      probe = r;
      if (probe.i64(i)) return agrees(i);
      if (r.f64(d)) h = h * 131 + static_cast<uint64_t>(d == d);
      return h;
    }
    case JsonReader::Kind::kBool: {
      bool b = false;
      if (r.boolean(b)) h = h * 131 + b;
      return h;
    }
    case JsonReader::Kind::kNull:
      r.null();
      return h;
    default:
      r.skip();
      return h;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool bytes : {false, true}) {
    JsonReader a(text, 0, bytes), b(text, 0, bytes);
    uint64_t ha = walk(a, 0);
    bool ok_a = a.ok() && a.at_end();
    uint64_t hb = walk(b, 0);
    bool ok_b = b.ok() && b.at_end();
    if (ha != hb || ok_a != ok_b) __builtin_trap();  // the reader is deterministic
    if (!a.ok() && a.error_offset() > size) __builtin_trap();
    JsonReader s(text, 0, bytes);
    s.skip();
    if (s.ok() && s.offset() > size) __builtin_trap();
  }
  return 0;
}
