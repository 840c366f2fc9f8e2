// Bytes as traces and captures write them (lower-case hex, two digits a byte), written here
// rather than with the project's own encoder: the tests build and read those bytes independently
// of the code under test.
#pragma once

#include <string>

namespace cudatool::test {

inline std::string hex_of(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

}  // namespace cudatool::test
