#include "base/errno_error.hpp"

#include <fmt/format.h>

#include <cstring>

namespace cudatool {

std::string errno_text(std::string_view action, int err) {
  if (action.empty()) return std::strerror(err);
  return fmt::format("{}: {}", action, std::strerror(err));
}

Error errno_error(std::string path, std::string_view action, int err) {
  return make_error(std::move(path), "", std::nullopt, errno_text(action, err));
}

}  // namespace cudatool
