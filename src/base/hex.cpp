#include "base/hex.hpp"

#include <fmt/format.h>

#include <charconv>

namespace cudatool {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::vector<uint8_t>> parse_hex_bytes(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = hex_digit(hex[2 * i]);
    int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

void append_hex(std::string& out, ByteView bytes) {
  static const char kHex[] = "0123456789abcdef";
  size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  for (uint64_t i = 0; i < bytes.size(); ++i) {
    out[at + 2 * i] = kHex[bytes.data()[i] >> 4];
    out[at + 2 * i + 1] = kHex[bytes.data()[i] & 15];
  }
}

std::string to_hex(ByteView bytes) {
  std::string s;
  append_hex(s, bytes);
  return s;
}

std::optional<uint64_t> parse_u64(std::string_view text, bool allow_decimal) {
  int base = allow_decimal ? 10 : 16;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty()) return std::nullopt;
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string hex_dump(ByteView bytes, uint64_t base, size_t max_bytes) {
  std::string out;
  uint64_t n = bytes.size() < max_bytes ? bytes.size() : max_bytes;
  for (uint64_t line = 0; line < n; line += 16) {
    out += fmt::format("{:08x} ", base + line);
    std::string ascii;
    for (uint64_t i = line; i < line + 16; ++i) {
      if (i < n) {
        uint8_t b = bytes.data()[i];
        out += fmt::format(" {:02x}", b);
        ascii.push_back(b >= 0x20 && b < 0x7f ? static_cast<char>(b) : '.');
      } else {
        out += "   ";
      }
    }
    out += "  " + ascii + "\n";
  }
  if (n < bytes.size()) out += fmt::format("… {} more bytes\n", bytes.size() - n);
  return out;
}

}  // namespace cudatool
