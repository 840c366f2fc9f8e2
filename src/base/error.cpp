#include "base/error.hpp"

#include <fmt/format.h>

namespace cudatool {

std::string Error::message() const {
  std::string out = structure.empty() ? std::string("input") : structure;
  if (!field.empty()) out += fmt::format(": {}", field);
  out += fmt::format(": {}", reason);
  if (offset) out += fmt::format(" (at file offset {:#x})", *offset);
  return out;
}

Error make_error(std::string structure, std::string field, std::optional<uint64_t> offset,
                 std::string reason) {
  return Error{std::move(structure), std::move(field), offset, std::move(reason)};
}

void Diagnostics::report(Error e) {
  ++count_;
  if (items_.size() < kMaxKept) items_.push_back(std::move(e));
}

}  // namespace cudatool
