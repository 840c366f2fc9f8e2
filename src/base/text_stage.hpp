// Text written through an inline cursor into a buffer of the stage's own, and handed to a
// std::string in one append. For formatters that write many small pieces per event (decode's
// text lines, JsonWriter): each std::string append is an out-of-line call that checks capacity
// and terminates the string, and a number assembled on the stack and then appended is read back
// before its bytes have left the store buffer.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace cudatool {

class TextStage {
 public:
  // capacity: the buffer's first size (a piece larger than it grows it).
  TextStage(std::string& out, size_t capacity);
  ~TextStage() { flush(); }
  TextStage(const TextStage&) = delete;
  TextStage& operator=(const TextStage&) = delete;

  // Room for n more bytes at the cursor: write up to n bytes there, then set_cursor(their end).
  char* room(size_t n) {
    if (static_cast<size_t>(lim_ - cur_) < n) make_room(n);
    return cur_;
  }
  void set_cursor(char* end) { cur_ = end; }
  // Bytes left before the buffer must be handed on or grown.
  [[nodiscard]] size_t left() const { return static_cast<size_t>(lim_ - cur_); }
  [[nodiscard]] char* cursor() const { return cur_; }

  void put(char c) {
    *room(1) = c;
    ++cur_;
  }
  void put(const char* p, size_t n) {
    if (n == 0) return;  // p may be null then (an empty string_view), which memcpy must not get
    std::memcpy(room(n), p, n);
    cur_ += n;
  }
  void put(std::string_view s) { put(s.data(), s.size()); }
  void fill(size_t n, char c) {
    std::memset(room(n), c, n);
    cur_ += n;
  }
  TextStage& operator+=(char c) {
    put(c);
    return *this;
  }
  TextStage& operator+=(std::string_view s) {
    put(s);
    return *this;
  }

  // Appends what is staged to the string.
  void flush() {
    if (cur_ != buf_.get()) flush_some();
  }

 private:
  void make_room(size_t n);
  void flush_some();

  std::string& out_;
  std::unique_ptr<char[]> buf_;
  size_t cap_;
  char* cur_;
  char* lim_;
};

}  // namespace cudatool
