#include "base/text_stage.hpp"

#include <algorithm>

namespace cudatool {

TextStage::TextStage(std::string& out, size_t capacity)
    : out_(out),
      buf_(std::make_unique_for_overwrite<char[]>(capacity)),
      cap_(capacity),
      cur_(buf_.get()),
      lim_(cur_ + cap_) {}

void TextStage::flush_some() {
  out_.append(buf_.get(), cur_);
  cur_ = buf_.get();
}

void TextStage::make_room(size_t n) {
  flush();
  if (n > cap_) {
    cap_ = std::max(n, 2 * cap_);
    buf_ = std::make_unique_for_overwrite<char[]>(cap_);
    cur_ = buf_.get();
    lim_ = cur_ + cap_;
  }
}

}  // namespace cudatool
