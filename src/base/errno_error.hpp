// Errors of failed system calls, worded one way everywhere.
#pragma once

#include <string>
#include <string_view>

#include "base/error.hpp"

namespace cudatool {

// "<action>: <strerror(err)>" ("cannot open: No such file or directory"); `action` empty gives
// the system's text alone. Pass errno's value as it was right after the failed call.
[[nodiscard]] std::string errno_text(std::string_view action, int err);

// The Error of a failed system call on `path`: structure `path`, reason errno_text(action, err).
[[nodiscard]] Error errno_error(std::string path, std::string_view action, int err);

}  // namespace cudatool
