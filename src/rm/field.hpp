// A decoded value of the NVIDIA kernel ABI: one member of a structure read from bytes by its
// layout in the generated tables (rm/decode_layout.hpp), shown by kind (handle, class, control
// command, status, string, list, …). trace/decode.hpp builds a whole call out of these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rm/tables.hpp"

namespace cudatool::rm {

// How a value is shown.
enum class ValueKind : uint8_t {
  kHex,      // 0x1f
  kDec,      // 31
  kSigned,   // -1
  kHandle,   // 0xc1d00033 (an RM object handle)
  kClass,    // NV01_ROOT_CLIENT / 0xabcd?
  kControl,  // NV2080_CTRL_CMD_GPU_GET_INFO_V2 / 0x20808159? (NV2080_CTRL_GPU_LEGACY_…)
  kStatus,   // NV_OK / 0x1234?
  kChar,     // '2'
  kString,   // "580.159.04" (text holds it)
  kBytes,    // hex digits (text holds them)
  kList,     // [a, b, …] (items hold the elements; total counts all of them)
  kStruct,   // {m=…, …} (items hold the members)
};

struct Field {
  // User-provided, so that value-initialisation (emplace_back()) runs the member initialisers
  // instead of first zeroing the whole object (a `rep stos` that cost 7% of `decode`).
  Field() noexcept {}  // NOLINT(modernize-use-equals-default)

  std::string_view name;  // member name; "" for list elements
  ValueKind kind = ValueKind::kHex;
  uint64_t value = 0;
  std::string_view symbol;  // name of the value (class, control, status), "" when unknown
  // kControl: without a symbol, the interface when known; with a symbol that no header define
  // gives (rm::kCtrlNameFromNvoc), RM's handler for the command.
  std::string_view category;
  std::string text;          // kString / kBytes payload
  std::vector<Field> items;  // kList elements / kStruct members
  uint64_t total = 0;        // kList: elements the source holds (items may keep fewer)
};

inline constexpr size_t kMaxHexBytes = 256;
inline constexpr size_t kMaxListItems = 64;

// How the decoders show member `m` of structure `struct_name` (each element, for an array member):
// kHandle, kClass, kStatus, kControl, … — the choice decode_struct makes (name, declared type and
// the per-structure overrides). For A/B normalisation (ab/), which renames handles.
ValueKind member_kind(std::string_view struct_name, const FieldEntry& m);

}  // namespace cudatool::rm
