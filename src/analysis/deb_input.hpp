// Reading a libcuda build straight out of a Debian package (.deb): the ar wrapper, then
// data.tar.{xz,zst,gz,} decompressed in memory (capped), then the library member.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"

namespace cudatool {

struct DebLibrary {
  std::vector<uint8_t> bytes;  // the library file's contents
  std::string member;          // its path inside the package, "usr/lib/…/libcuda.so.550.163.01"
};

// Largest data.tar a package may decompress to (Debian's libcuda1 is ~30 MB unpacked).
inline constexpr uint64_t kMaxDebDataTar = 1ULL << 30;

// Finds the regular file whose name starts with `stem` ("libcuda.so.") followed by a version
// (digits and dots), preferring the longest name. Errors say what the package holds instead.
Result<DebLibrary> extract_library_from_deb(ByteView deb, std::string_view deb_path,
                                            std::string_view stem = "libcuda.so.");

}  // namespace cudatool
