#include "trace/line_source.hpp"

#include <fcntl.h>
#include <lzma.h>
#include <unistd.h>
#include <zstd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>

#include "base/mapped_file.hpp"

namespace cudatool::trace {
namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
constexpr unsigned char kXzMagic[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};

bool starts_with(std::string_view data, const unsigned char* magic, size_t n) {
  return data.size() >= n && std::memcmp(data.data(), magic, n) == 0;
}

// The bytes of the file: mapped, or owned (from_memory).
struct Storage {
  MappedFile file;
  std::string owned;
  [[nodiscard]] std::string_view data() const {
    return owned.empty() ? file.bytes().chars() : std::string_view(owned);
  }
};

// Lines of bytes that are all in memory (a mapped file or an owned buffer).
class PlainLines : public LineSource {
 public:
  PlainLines(Storage s, std::string name) : storage_(std::move(s)), text_(storage_.data()) {
    name_ = std::move(name);
  }

  bool next(std::string_view& line, uint64_t& offset, bool& complete) override {
    if (pos_ >= text_.size()) return false;
    const char* start = text_.data() + pos_;
    size_t left = text_.size() - pos_;
    const void* nl = std::memchr(start, '\n', left);
    offset = pos_;
    if (nl == nullptr) {
      line = std::string_view(start, left);
      complete = false;
      pos_ = text_.size();
    } else {
      size_t n = static_cast<size_t>(static_cast<const char*>(nl) - start);
      line = std::string_view(start, n);
      complete = true;
      pos_ += n + 1;
    }
    return true;
  }

  std::string_view unread(uint64_t& offset) override {
    offset = pos_;
    return text_.substr(pos_);
  }
  void skip(size_t n) override { pos_ += std::min(n, text_.size() - pos_); }

 private:
  Storage storage_;
  std::string_view text_;
  size_t pos_ = 0;
};

// Lines of a compressed stream: decompressed chunk by chunk into buf_, which holds at most one
// partial line plus one chunk.
class StreamLines : public LineSource {
 public:
  StreamLines(Storage s, std::string name, uint64_t max_line, std::string_view compression)
      : storage_(std::move(s)), in_(storage_.data()), max_line_(max_line) {
    name_ = std::move(name);
    compression_ = compression;
  }

  bool next(std::string_view& line, uint64_t& offset, bool& complete) override {
    while (true) {
      if (pos_ < buf_.size()) {
        const char* start = buf_.data() + pos_;
        size_t left = buf_.size() - pos_;
        const void* nl = std::memchr(start + scanned_, '\n', left - scanned_);
        if (nl != nullptr) {
          size_t n = static_cast<size_t>(static_cast<const char*>(nl) - start);
          line = std::string_view(start, n);
          offset = text_offset_;
          complete = true;
          pos_ += n + 1;
          text_offset_ += n + 1;
          scanned_ = 0;
          return true;
        }
        scanned_ = left;
        if (left > max_line_) {
          fail(fmt::format("a line is longer than {} bytes", max_line_), text_offset_);
          return false;
        }
      }
      if (input_done_) {
        if (pos_ < buf_.size()) {
          line = std::string_view(buf_.data() + pos_, buf_.size() - pos_);
          offset = text_offset_;
          complete = false;
          text_offset_ += line.size();
          pos_ = buf_.size();
          return true;
        }
        return false;
      }
      // Keep the partial line, drop what was consumed, decompress more behind it.
      if (pos_ > 0) {
        buf_.erase(0, pos_);
        pos_ = 0;
      }
      if (!fill()) input_done_ = true;
    }
  }

 protected:
  // Appends decompressed bytes to buf_; false when the stream has ended (or failed).
  virtual bool fill() = 0;

  void fail(std::string reason, uint64_t at) {
    if (!error_) error_ = make_error(name_, "", at, std::move(reason));
    input_done_ = true;
  }

  // Compressed input: a whole mapped file or owned bytes.
  Storage storage_;
  std::string_view in_;
  size_t in_pos_ = 0;
  std::string buf_;
  size_t pos_ = 0;
  size_t scanned_ = 0;  // bytes of the partial line already searched for '\n'
  uint64_t text_offset_ = 0;
  uint64_t max_line_;
  bool input_done_ = false;
  static constexpr size_t kChunk = 64 << 10;
};

class ZstdLines : public StreamLines {
 public:
  using StreamLines::StreamLines;
  ~ZstdLines() override { ZSTD_freeDStream(ds_); }

 protected:
  bool fill() override {
    if (ds_ == nullptr) {
      ds_ = ZSTD_createDStream();
      if (ds_ == nullptr) {
        fail("out of memory for the zstd decoder", 0);
        return false;
      }
    }
    if (in_pos_ >= in_.size() && !out_full_) {
      if (frame_open_) {
        fail(fmt::format("zstd stream ends inside a frame (the recorder was stopped before it "
                         "finished); the {} bytes before were read",
                         text_offset_ + (buf_.size() - pos_)),
             in_.size());
      }
      return false;
    }
    size_t at = buf_.size();
    buf_.resize(at + kChunk);
    ZSTD_inBuffer in{in_.data(), in_.size(), in_pos_};
    ZSTD_outBuffer out{buf_.data() + at, kChunk, 0};
    size_t r = ZSTD_decompressStream(ds_, &out, &in);
    in_pos_ = in.pos;
    buf_.resize(at + out.pos);
    if (ZSTD_isError(r)) {
      fail(fmt::format("zstd: {}", ZSTD_getErrorName(r)), in_pos_);
      return out.pos > 0;
    }
    frame_open_ = r != 0;
    out_full_ = out.pos == kChunk;  // more output may be buffered in the decoder
    return true;
  }

 private:
  ZSTD_DStream* ds_ = nullptr;
  bool frame_open_ = false;
  bool out_full_ = false;
};

class XzLines : public StreamLines {
 public:
  using StreamLines::StreamLines;
  ~XzLines() override {
    if (started_) lzma_end(&strm_);
  }

 protected:
  bool fill() override {
    if (ended_) return false;
    if (!started_) {
      if (lzma_stream_decoder(&strm_, 256ULL << 20, LZMA_CONCATENATED) != LZMA_OK) {
        fail("cannot start the xz decoder", 0);
        return false;
      }
      started_ = true;
    }
    size_t at = buf_.size();
    buf_.resize(at + kChunk);
    strm_.next_in = reinterpret_cast<const uint8_t*>(in_.data()) + in_pos_;
    strm_.avail_in = in_.size() - in_pos_;
    strm_.next_out = reinterpret_cast<uint8_t*>(buf_.data() + at);
    strm_.avail_out = kChunk;
    lzma_action action = strm_.avail_in == 0 ? LZMA_FINISH : LZMA_RUN;
    lzma_ret r = lzma_code(&strm_, action);
    in_pos_ = in_.size() - strm_.avail_in;
    size_t produced = kChunk - strm_.avail_out;
    buf_.resize(at + produced);
    if (r == LZMA_STREAM_END) {
      ended_ = true;
      return true;
    }
    if (r == LZMA_OK) {
      if (produced == 0 && action == LZMA_FINISH) {
        // LZMA_FINISH made no progress: input is exhausted inside the stream. (LZMA_RUN may
        // take the last input and give nothing, as for an empty stream: the next call says.)
        fail("xz stream is cut short", in_pos_);
        return false;
      }
      return true;
    }
    if (r == LZMA_BUF_ERROR) {
      fail("xz stream is cut short", in_pos_);
      return produced > 0;
    }
    const char* why = r == LZMA_FORMAT_ERROR     ? "not an xz stream"
                      : r == LZMA_DATA_ERROR     ? "corrupt data"
                      : r == LZMA_MEMLIMIT_ERROR ? "needs more than 256 MiB of memory"
                      : r == LZMA_OPTIONS_ERROR  ? "unsupported options"
                                                 : "decoder error";
    fail(fmt::format("xz: {}", why), in_pos_);
    return produced > 0;
  }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
  bool started_ = false;
  bool ended_ = false;
};

std::unique_ptr<LineSource> make_source(Storage st, std::string name, uint64_t max_line) {
  std::string_view data = st.data();
  if (starts_with(data, kZstdMagic, sizeof kZstdMagic)) {
    return std::make_unique<ZstdLines>(std::move(st), std::move(name), max_line, "zstd");
  }
  if (starts_with(data, kXzMagic, sizeof kXzMagic)) {
    return std::make_unique<XzLines>(std::move(st), std::move(name), max_line, "xz");
  }
  return std::make_unique<PlainLines>(std::move(st), std::move(name));
}

}  // namespace

Result<std::unique_ptr<LineSource>> LineSource::open(const std::string& path, uint64_t max_line) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  return make_source(Storage{std::move(*f), std::string()}, path, max_line);
}

std::unique_ptr<LineSource> LineSource::from_memory(std::string bytes, std::string name,
                                                    uint64_t max_line) {
  return make_source(Storage{MappedFile(), std::move(bytes)}, std::move(name), max_line);
}

}  // namespace cudatool::trace
