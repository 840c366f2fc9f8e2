// Whole-buffer decompression with an output cap (a decompression bomb stops at the cap with an
// error, it never exhausts memory). Formats: xz (liblzma), zstd (libzstd), gzip (zlib).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool {

enum class Compression : uint8_t { kNone, kXz, kZstd, kGzip };

// Recognises the format from its magic bytes.
Compression detect_compression(ByteView data);
std::string_view compression_name(Compression c);

// Decompresses all of `data`; fails when the output would exceed `max_output` bytes, when the
// stream is damaged or truncated. `what` names the input in error messages.
Result<std::vector<uint8_t>> decompress(ByteView data, Compression c, uint64_t max_output,
                                        std::string_view what);

}  // namespace cudatool
