#include "base/bytes.hpp"

#include <string.h>  // memmem (GNU)

namespace cudatool {

std::optional<uint64_t> ByteView::find(std::string_view needle, uint64_t from) const {
  if (from > size_ || needle.size() > size_ - from) return std::nullopt;
  if (needle.empty()) return from;
  const void* hit = memmem(data_ + from, size_ - from, needle.data(), needle.size());
  if (hit == nullptr) return std::nullopt;
  return static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - data_);
}

uint64_t Cursor::uleb128() {
  uint64_t result = 0;
  unsigned shift = 0;
  while (true) {
    if (error_ != nullptr) return 0;
    if (pos_ >= view_.size()) {
      fail("ULEB128 runs past the end");
      return 0;
    }
    uint8_t byte = view_.data()[pos_++];
    if (shift < 64) {
      uint64_t slice = byte & 0x7f;
      // Bits that would be shifted out of 64 must be zero.
      if (shift > 0 && (slice >> (64 - shift)) != 0) {
        fail("ULEB128 too large for 64 bits");
        return 0;
      }
      result |= slice << shift;
    } else if ((byte & 0x7f) != 0) {
      fail("ULEB128 too large for 64 bits");
      return 0;
    }
    shift += 7;
    if ((byte & 0x80) == 0) return result;
    if (shift > 70) {  // at most 10 bytes carry a 64-bit value; padding beyond is hostile
      fail("ULEB128 longer than 10 bytes");
      return 0;
    }
  }
}

int64_t Cursor::sleb128() {
  uint64_t result = 0;
  unsigned shift = 0;
  uint8_t byte = 0;
  while (true) {
    if (error_ != nullptr) return 0;
    if (pos_ >= view_.size()) {
      fail("SLEB128 runs past the end");
      return 0;
    }
    byte = view_.data()[pos_++];
    if (shift < 64) result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    shift += 7;
    if ((byte & 0x80) == 0) break;
    if (shift > 70) {
      fail("SLEB128 longer than 10 bytes");
      return 0;
    }
  }
  if (shift < 64 && (byte & 0x40) != 0) result |= ~uint64_t{0} << shift;
  return static_cast<int64_t>(result);
}

std::string_view Cursor::cstring() {
  if (error_ != nullptr) return {};
  auto s = view_.cstring(pos_);
  if (!s) {
    fail("string is not NUL-terminated before the end");
    return {};
  }
  pos_ += s->size() + 1;
  return *s;
}

ByteView Cursor::bytes(uint64_t n) {
  if (error_ != nullptr) return {};
  auto v = view_.sub(pos_, n);
  if (!v) {
    fail("byte range runs past the end");
    return {};
  }
  pos_ += n;
  return *v;
}

void Cursor::skip(uint64_t n) {
  if (error_ != nullptr) return;
  if (n > view_.size() - pos_) {
    fail("skip runs past the end");
    return;
  }
  pos_ += n;
}

void Cursor::seek(uint64_t pos) {
  if (error_ != nullptr) return;
  if (pos > view_.size()) {
    fail("seek past the end");
    return;
  }
  pos_ = pos;
}

}  // namespace cudatool
