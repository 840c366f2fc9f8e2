// SHA-256 (FIPS 180-4), for `info --sha256`. Only computed on request: hashing 100 MB is the
// one thing `info` must not do by default.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/bytes.hpp"

namespace cudatool {

std::array<uint8_t, 32> sha256(ByteView data);
std::string sha256_hex(ByteView data);

}  // namespace cudatool
