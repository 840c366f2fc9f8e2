// Strings that live as long as their owner and never move: bump-allocated in 64 KiB blocks. A
// map of thousands of names keeps string_views into one of these instead of a std::string each.
#pragma once

#include <cstring>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

namespace cudatool {

class StringArena {
 public:
  // A copy of `s`, valid while the arena lives.
  std::string_view intern(std::string_view s) { return concat({s}); }
  // The parts, one after the other, as one string.
  std::string_view concat(std::initializer_list<std::string_view> parts) {
    size_t n = 0;
    for (auto p : parts) n += p.size();
    if (n > left_) {
      size_t block = std::max<size_t>(n, kBlock);
      // Not zeroed (make_unique<char[]> would write all of it): a page is touched when used.
      blocks_.push_back(std::unique_ptr<char[]>(new char[block]));
      next_ = blocks_.back().get();
      left_ = block;
    }
    char* start = next_;
    for (auto p : parts) {
      if (!p.empty()) std::memcpy(next_, p.data(), p.size());
      next_ += p.size();
    }
    left_ -= n;
    return {start, n};
  }

 private:
  static constexpr size_t kBlock = 64 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t left_ = 0;
  char* next_ = nullptr;
};

}  // namespace cudatool
