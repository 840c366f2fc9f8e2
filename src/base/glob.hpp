// The one glob matcher of the C++ side: '*' (any run of bytes), '?' (one byte), '[…]' (a set,
// with ranges and a leading '!' or '^' to negate), case-insensitive over byte strings. Used by
// decode's --filter names, the stack resolver's --api-lib and the function recorder's GLOBS.
// (The recorders' plain-C twin for --devices is src/record/glob_match.h.)
#pragma once

#include <string_view>

namespace cudatool {

// Whether `text` matches `pattern`, which must already be lower-case.
bool glob_match_lower(std::string_view pattern, std::string_view text);

}  // namespace cudatool
