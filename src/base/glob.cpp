#include "base/glob.hpp"

#include <cctype>
#include <optional>

namespace cudatool {
namespace {

// One bracket set at p[i] (after '['): whether c is in it, and where it ends; nullopt when the set
// is not closed (then '[' is an ordinary byte).
std::optional<bool> glob_set(std::string_view p, size_t& i, char c) {
  size_t j = i;
  bool negate = false;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
    negate = true;
    ++j;
  }
  size_t start = j;
  bool match = false;
  while (j < p.size() && (p[j] != ']' || j == start)) {
    char lo = p[j], hi = lo;
    if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
      hi = p[j + 2];
      j += 2;
    }
    if (c >= lo && c <= hi) match = true;
    ++j;
  }
  if (j >= p.size()) return std::nullopt;
  i = j + 1;
  return match != negate;
}

}  // namespace

bool glob_match_lower(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0;
  size_t star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      if (pi == p.size()) return true;
      star_p = pi;
      star_s = si;
      continue;
    }
    bool ok = false;
    size_t next = pi + 1;
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[si])));
    if (pi < p.size()) {
      if (p[pi] == '?') {
        ok = true;
      } else if (p[pi] == '[') {
        size_t j = pi + 1;
        auto r = glob_set(p, j, c);
        ok = r ? *r : c == '[';
        if (r) next = j;
      } else {
        ok = p[pi] == c;
      }
    }
    if (ok) {
      pi = next;
      ++si;
    } else if (star_p != std::string_view::npos) {
      pi = star_p;
      si = ++star_s;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace cudatool
