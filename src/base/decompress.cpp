#include "base/decompress.hpp"

#include <fmt/format.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>

namespace cudatool {
namespace {

constexpr size_t kChunk = 1 << 20;

Error cap_error(std::string_view what, uint64_t cap) {
  return make_error(std::string(what), "", std::nullopt,
                    fmt::format("decompressed size exceeds the cap of {} bytes", cap));
}

// Grows `out` by one chunk (bounded by the cap) and returns the new free space.
bool grow(std::vector<uint8_t>& out, size_t& used, uint64_t cap) {
  if (used >= cap) return false;
  size_t next = static_cast<size_t>(std::min<uint64_t>(cap, used + kChunk));
  out.resize(next);
  return true;
}

Result<std::vector<uint8_t>> unxz(ByteView in, uint64_t cap, std::string_view what) {
  lzma_stream s = LZMA_STREAM_INIT;
  // The memory limit bounds the decoder's dictionary (hostile headers can ask for 4 GiB).
  if (lzma_stream_decoder(&s, 256u << 20, LZMA_CONCATENATED) != LZMA_OK) {
    return make_error(std::string(what), "", std::nullopt, "cannot start the xz decoder");
  }
  std::vector<uint8_t> out;
  size_t used = 0;
  s.next_in = in.data();
  s.avail_in = in.size();
  lzma_ret r = LZMA_OK;
  while (true) {
    if (s.avail_out == 0) {
      if (!grow(out, used, cap)) {
        lzma_end(&s);
        return cap_error(what, cap);
      }
      s.next_out = out.data() + used;
      s.avail_out = out.size() - used;
    }
    r = lzma_code(&s, LZMA_FINISH);
    used = out.size() - s.avail_out;
    if (r == LZMA_STREAM_END) break;
    if (r != LZMA_OK) {
      lzma_end(&s);
      return make_error(
          std::string(what), "", in.base() + (in.size() - s.avail_in),
          fmt::format("xz stream is damaged or truncated (liblzma error {})", static_cast<int>(r)));
    }
  }
  lzma_end(&s);
  out.resize(used);
  return out;
}

Result<std::vector<uint8_t>> unzstd(ByteView in, uint64_t cap, std::string_view what) {
  ZSTD_DStream* d = ZSTD_createDStream();
  if (d == nullptr) return make_error(std::string(what), "", std::nullopt, "cannot start zstd");
  // Bounds the window a hostile frame may request.
  ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 27);
  std::vector<uint8_t> out;
  size_t used = 0;
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  while (true) {
    if (used == out.size() && !grow(out, used, cap)) {
      ZSTD_freeDStream(d);
      return cap_error(what, cap);
    }
    ZSTD_outBuffer ob{out.data(), out.size(), used};
    size_t r = ZSTD_decompressStream(d, &ob, &ib);
    used = ob.pos;
    if (ZSTD_isError(r)) {
      ZSTD_freeDStream(d);
      return make_error(std::string(what), "", in.base() + ib.pos,
                        fmt::format("zstd stream is damaged: {}", ZSTD_getErrorName(r)));
    }
    if (r == 0 && ib.pos == ib.size) break;  // every frame complete, all input used
    // Out of input with room left for output: the decoder wants bytes that are not there.
    if (ib.pos == ib.size && ob.pos < ob.size) {
      ZSTD_freeDStream(d);
      return make_error(std::string(what), "", in.base() + ib.pos, "zstd stream is truncated");
    }
  }
  ZSTD_freeDStream(d);
  out.resize(used);
  return out;
}

Result<std::vector<uint8_t>> ungzip(ByteView in, uint64_t cap, std::string_view what) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
    return make_error(std::string(what), "", std::nullopt, "cannot start the gzip decoder");
  }
  std::vector<uint8_t> out;
  size_t used = 0;
  // zlib counts in 32-bit units; the inputs here are far smaller, but feed in slices anyway.
  uint64_t fed = 0;
  int r = Z_OK;
  while (r != Z_STREAM_END) {
    if (z.avail_in == 0 && fed < in.size()) {
      uint64_t n = std::min<uint64_t>(in.size() - fed, 1u << 30);
      z.next_in = const_cast<Bytef*>(in.data() + fed);
      z.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    if (z.avail_out == 0) {
      if (!grow(out, used, cap)) {
        inflateEnd(&z);
        return cap_error(what, cap);
      }
      z.next_out = out.data() + used;
      z.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - used, 1u << 30));
    }
    uInt before = z.avail_out;
    r = inflate(&z, Z_NO_FLUSH);
    used += before - z.avail_out;
    if (r == Z_BUF_ERROR && z.avail_in == 0 && fed == in.size()) r = Z_DATA_ERROR;
    if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
      inflateEnd(&z);
      return make_error(std::string(what), "", std::nullopt, "gzip stream is damaged or truncated");
    }
  }
  inflateEnd(&z);
  out.resize(used);
  return out;
}

}  // namespace

Compression detect_compression(ByteView d) {
  auto starts = [&](std::string_view m) {
    return d.size() >= m.size() && d.chars().substr(0, m.size()) == m;
  };
  if (starts(std::string_view("\xfd"
                              "7zXZ\0",
                              6)))
    return Compression::kXz;
  if (starts("\x28\xb5\x2f\xfd")) return Compression::kZstd;
  if (starts("\x1f\x8b")) return Compression::kGzip;
  return Compression::kNone;
}

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::kXz:
      return "xz";
    case Compression::kZstd:
      return "zstd";
    case Compression::kGzip:
      return "gzip";
    default:
      return "none";
  }
}

Result<std::vector<uint8_t>> decompress(ByteView data, Compression c, uint64_t max_output,
                                        std::string_view what) {
  switch (c) {
    case Compression::kXz:
      return unxz(data, max_output, what);
    case Compression::kZstd:
      return unzstd(data, max_output, what);
    case Compression::kGzip:
      return ungzip(data, max_output, what);
    case Compression::kNone:
      if (data.size() > max_output) return cap_error(what, max_output);
      return std::vector<uint8_t>(data.data(), data.data() + data.size());
  }
  return make_error(std::string(what), "", std::nullopt, "unknown compression");
}

}  // namespace cudatool
