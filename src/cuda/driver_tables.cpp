#include "cuda/driver_tables.hpp"

#include <algorithm>

namespace cudatool::cuda {

void ExportNames::add(uint64_t address, std::string_view name) {
  by_address_.emplace_back(address, name);
}

void ExportNames::finish() {
  std::stable_sort(by_address_.begin(), by_address_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

std::string_view ExportNames::at(uint64_t address) const {
  auto it = std::lower_bound(by_address_.begin(), by_address_.end(), address,
                             [](const auto& e, uint64_t a) { return e.first < a; });
  if (it == by_address_.end() || it->first != address) return {};
  return it->second;
}

std::string_view proc_flags_name(ProcFlags f) {
  switch (f) {
    case ProcFlags::kDefault:
      return "default";
    case ProcFlags::kLegacy:
      return "legacy";
    case ProcFlags::kPerThread:
      return "per-thread";
  }
  return "?";
}

std::string_view slot_kind_name(SlotKind k) {
  switch (k) {
    case SlotKind::kSize:
      return "size";
    case SlotKind::kFunction:
      return "function";
    case SlotKind::kData:
      return "data";
    case SlotKind::kNull:
      return "null";
    case SlotKind::kValue:
      return "value";
    case SlotKind::kNowhere:
      return "nowhere";
  }
  return "?";
}

std::string_view wrapper_kind_name(WrapperKind k) {
  switch (k) {
    case WrapperKind::kSlotJump:
      return "slot-jump";
    case WrapperKind::kSlotCall:
      return "slot-call";
    case WrapperKind::kConstant:
      return "constant";
    case WrapperKind::kOther:
      return "other";
  }
  return "?";
}

std::string format_uuid(const Uuid& u) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kDigits[u[i] >> 4]);
    s.push_back(kDigits[u[i] & 0xf]);
  }
  return s;
}

std::optional<Uuid> parse_uuid(std::string_view text) {
  if (text.size() == 38 && text.front() == '{' && text.back() == '}') text = text.substr(1, 36);
  Uuid u{};
  size_t j = 0;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '-') {
      ++i;
      continue;
    }
    if (i + 1 >= text.size() || j >= 16) return std::nullopt;
    int hi = nib(text[i]), lo = nib(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    u[j++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  if (j != 16) return std::nullopt;
  return u;
}

const ErrorEntry* ErrorTable::by_code(uint32_t code) const {
  for (const auto& e : entries)
    if (e.code == code) return &e;
  return nullptr;
}

}  // namespace cudatool::cuda
