// Layout-driven decoding of one structure: members located by the generated field tables of the
// branch, shown by kind (handle, class, status, string, list …) chosen from the member's name and
// type, with a few per-structure overrides. Read by trace/decode.cpp and the tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "rm/field.hpp"
#include "rm/tables.hpp"

namespace cudatool::rm::detail {

// Appends the members of `s` read from `bytes` (which may be shorter than the structure: members
// that do not fit are left out and one line in `partial` says so, naming `what`).
void decode_struct(const Tables& t, const StructEntry& s, ByteView bytes, std::vector<Field>& out,
                   std::vector<std::string>& partial, std::string_view what, int depth = 0);

// Reads an unsigned little-endian value of 1, 2, 4 or 8 bytes; other sizes (and bytes out of
// range) read as 0.
inline uint64_t read_uint(ByteView bytes, uint64_t off, uint32_t size) {
  switch (size) {
    case 1:
      return bytes.read<uint8_t>(off).value_or(0);
    case 2:
      return bytes.read<uint16_t>(off).value_or(0);
    case 4:
      return bytes.read<uint32_t>(off).value_or(0);
    case 8:
      return bytes.read<uint64_t>(off).value_or(0);
    default:
      return 0;
  }
}

}  // namespace cudatool::rm::detail
