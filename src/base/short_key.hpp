// Member names of at most 7 bytes as one integer, so that a parser dispatches on a key with one
// switch instead of a chain of string comparisons (trace lines: "seq", "t", "dur", "pre", …).
//
//   switch (short_key(k)) {
//     case short_key("seq"): …
//     default: longer keys compared as strings
//   }
//
// The bytes go in little-endian order and the length in the top byte, so that "seq" and
// "seq\0" (a key with an escaped NUL) differ. A key of 8 bytes or more is kLongKey, which no
// short key equals.
#pragma once

#include <cstdint>
#include <string_view>

namespace cudatool {

inline constexpr uint64_t kLongKey = ~uint64_t{0};

constexpr uint64_t short_key(std::string_view s) {
  if (s.size() > 7) return kLongKey;
  uint64_t v = static_cast<uint64_t>(s.size()) << 56;
  for (size_t i = 0; i < s.size(); ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
  }
  return v;
}

}  // namespace cudatool
