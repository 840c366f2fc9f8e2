// The lines of a text file that may be compressed: plain (memory-mapped, zero copy), zstd or xz
// (streamed through a bounded buffer). Compression is recognised by its magic bytes, not the
// file name. Used by the trace reader and by `import`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"

namespace cudatool::trace {

class LineSource {
 public:
  // A line longer than this is an error (a damaged or hostile file without newlines).
  static constexpr uint64_t kDefaultMaxLine = 256ULL << 20;

  virtual ~LineSource() = default;

  static Result<std::unique_ptr<LineSource>> open(const std::string& path,
                                                  uint64_t max_line = kDefaultMaxLine);
  static std::unique_ptr<LineSource> from_memory(std::string bytes, std::string name,
                                                 uint64_t max_line = kDefaultMaxLine);

  // The next line, without its '\n'. `offset` is the position of its first byte in the text
  // (the decompressed text for compressed files); `complete` is false for a last line that the
  // file ends without a '\n'. The view is valid until the next call. False at the end, or when
  // the stream is damaged (then stream_error() says why; lines before the damage were returned).
  virtual bool next(std::string_view& line, uint64_t& offset, bool& complete) = 0;

  // The text not yet returned, as one view starting at `offset`, for a reader that finds a line's
  // end as it parses the line (then skip(n) moves past n bytes, the '\n' included). Empty when the
  // source cannot give it (compressed streams): the reader then uses next().
  virtual std::string_view unread(uint64_t& offset) {
    offset = 0;
    return {};
  }
  virtual void skip(size_t n) { (void)n; }

  // Damage of the container found while reading: a compressed stream cut short, a corrupt block,
  // a line over the limit, a read error.
  [[nodiscard]] const std::optional<Error>& stream_error() const { return error_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // "none", "zstd" or "xz".
  [[nodiscard]] std::string_view compression() const { return compression_; }

 protected:
  std::string name_;
  std::string_view compression_ = "none";
  std::optional<Error> error_;
};

}  // namespace cudatool::trace
