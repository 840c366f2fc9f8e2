// The one way any code reads bytes of a file or of a tracee: a bounds-checked view and a
// cursor over it. Every check is written as `len > size - off` (never `off + len > size`, which
// overflows), and every count read from input is capped by what remains before it is used.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace cudatool {

// Little-endian load of a fixed-width integer from raw bytes (memcpy, never a pointer cast).
template <class T>
inline T load_le(const uint8_t* p) {
  static_assert(std::is_integral_v<T>, "load_le reads integers");
  T v;
  std::memcpy(&v, p, sizeof(T));  // x86-64 and every host we build for is little-endian
  return v;
}

template <class T>
inline void store_le(uint8_t* p, T v) {
  static_assert(std::is_integral_v<T>, "store_le writes integers");
  std::memcpy(p, &v, sizeof(T));
}

// A borrowed, immutable range of bytes. `base` is the file offset (or tracee address) of the
// first byte, kept so that errors can name absolute positions.
class ByteView {
 public:
  constexpr ByteView() = default;
  constexpr ByteView(const uint8_t* data, uint64_t size, uint64_t base = 0)
      : data_(data), size_(size), base_(base) {}
  explicit ByteView(std::string_view s, uint64_t base = 0)
      : data_(reinterpret_cast<const uint8_t*>(s.data())), size_(s.size()), base_(base) {}

  [[nodiscard]] const uint8_t* data() const { return data_; }
  [[nodiscard]] uint64_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // Absolute position (file offset) of byte 0 of this view.
  [[nodiscard]] uint64_t base() const { return base_; }

  [[nodiscard]] bool contains(uint64_t off, uint64_t len) const {
    return off <= size_ && len <= size_ - off;
  }

  // [off, off+len) or nothing when it does not fit.
  [[nodiscard]] std::optional<ByteView> sub(uint64_t off, uint64_t len) const {
    if (!contains(off, len)) return std::nullopt;
    return ByteView(data_ + off, len, base_ + off);
  }
  // [off, end) or nothing when off is past the end.
  [[nodiscard]] std::optional<ByteView> sub(uint64_t off) const {
    if (off > size_) return std::nullopt;
    return ByteView(data_ + off, size_ - off, base_ + off);
  }
  // Like sub() but clamps to what exists (for dumps and previews).
  [[nodiscard]] ByteView clamp(uint64_t off, uint64_t len) const {
    if (off > size_) off = size_;
    if (len > size_ - off) len = size_ - off;
    return ByteView(data_ + off, len, base_ + off);
  }

  template <class T>
  [[nodiscard]] std::optional<T> read(uint64_t off) const {
    if (!contains(off, sizeof(T))) return std::nullopt;
    return load_le<T>(data_ + off);
  }

  // The NUL-terminated string starting at off, which must end inside the view.
  [[nodiscard]] std::optional<std::string_view> cstring(uint64_t off) const {
    if (off >= size_) return std::nullopt;
    const void* nul = std::memchr(data_ + off, 0, size_ - off);
    if (nul == nullptr) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(data_ + off),
                            static_cast<const uint8_t*>(nul) - (data_ + off));
  }

  [[nodiscard]] std::span<const uint8_t> span() const { return {data_, size_}; }
  [[nodiscard]] std::string_view chars() const {
    return {reinterpret_cast<const char*>(data_), size_};
  }
  // Position of the first occurrence of needle at or after `from`, if any.
  [[nodiscard]] std::optional<uint64_t> find(std::string_view needle, uint64_t from = 0) const;

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t base_ = 0;
};

// A reading position in a ByteView. The first failed read records its position and reason;
// from then on every read returns 0 / empty and the cursor stays put, so a parser can read a
// whole record and check ok() once (the pattern of LLVM's DataExtractor::Cursor).
class Cursor {
 public:
  explicit Cursor(ByteView view, uint64_t pos = 0) : view_(view), pos_(pos) {
    if (pos > view.size()) fail("start position past the end");
  }

  [[nodiscard]] bool ok() const { return error_ == nullptr; }
  [[nodiscard]] uint64_t pos() const { return pos_; }
  // Absolute position (view base + pos).
  [[nodiscard]] uint64_t abs_pos() const { return view_.base() + pos_; }
  [[nodiscard]] uint64_t remaining() const { return ok() ? view_.size() - pos_ : 0; }
  [[nodiscard]] bool at_end() const { return !ok() || pos_ == view_.size(); }
  [[nodiscard]] const ByteView& view() const { return view_; }
  // Position (relative to the view) and reason of the first failure.
  [[nodiscard]] uint64_t error_pos() const { return error_pos_; }
  [[nodiscard]] const char* error_reason() const { return error_ ? error_ : ""; }

  uint8_t u8() { return get<uint8_t>(); }
  uint16_t u16() { return get<uint16_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int8_t s8() { return get<int8_t>(); }
  int16_t s16() { return get<int16_t>(); }
  int32_t s32() { return get<int32_t>(); }
  int64_t s64() { return get<int64_t>(); }

  uint64_t uleb128();
  int64_t sleb128();
  // A NUL-terminated string; the NUL is consumed but not returned.
  std::string_view cstring();
  // The next n bytes as a view (empty on failure).
  ByteView bytes(uint64_t n);
  void skip(uint64_t n);
  void seek(uint64_t pos);
  // Records a failure found by the caller (a value out of range, say).
  void fail(const char* reason) {
    if (error_ == nullptr) {
      error_ = reason;
      error_pos_ = pos_;
    }
  }

 private:
  template <class T>
  T get() {
    if (error_ != nullptr) return T{};
    if (sizeof(T) > view_.size() - pos_) {
      fail("read past the end");
      return T{};
    }
    T v = load_le<T>(view_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }

  ByteView view_;
  uint64_t pos_ = 0;
  const char* error_ = nullptr;
  uint64_t error_pos_ = 0;
};

}  // namespace cudatool
