#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

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

void Diagnostics::insert(size_t at, const Diagnostics& other) {
  at = std::min(at, items_.size());
  items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(at), other.items_.begin(),
                other.items_.end());
  if (items_.size() > kMaxKept) items_.resize(kMaxKept);
  count_ += other.count_;
}

}  // namespace cudatool
