// The GPU's identity in a driver conversation: the members that hold a GPU's UUID, its PCI
// location, RM's gpuId, the board id and the serial number. Two runs of one program on two
// machines (or a guest and its host) differ in exactly these values, as they differ in handles;
// ab names them gpu#0, gpu#1 … by order of first appearance (docs/ab.md, "The GPU's identity"), so
// that a GPU used consistently is no divergence and one used inconsistently still is.
//
// One row per member, with the reason, in one table (identity.cpp). The object shapes and the
// mask rules are elsewhere (ab/rules.hpp); tests/integration/ab_identity_test.cpp checks every
// row against the driver branches' tables and shows each is needed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cudatool::ab {

enum class IdentityKind : uint8_t {
  kUuid,         // 16 bytes: binary (NvProcessorUuid, a GID in binary format) or "GPU-…" text
  kPciLocation,  // domain, bus, slot (device), function: the members of one structure together
  kGpuId,        // RM's gpuId (NvU32)
  kBoardId,      // NvU32
  kSerial,       // text (NvU8[]), up to its NUL
};
inline constexpr size_t kIdentityKinds = 5;
// "uuid", "pci", "gpu_id", "board_id", "serial"
std::string_view identity_kind_name(IdentityKind k);
// How a GPU's value of this kind is named: "gpu#0" (the UUID: the GPU itself), "gpu#0.pci",
// "gpu#0.id", "gpu#0.board", "gpu#0.serial". Each kind counts its own values.
std::string identity_name(IdentityKind k, uint32_t ordinal);

struct IdentityRow {
  std::string_view structure;  // "NvProcessorUuid", "NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS"
  std::string_view member;     // "uuid", "gpuId"
  IdentityKind kind;
  std::string_view reason;  // why it differs between machines (docs/ab.md repeats it)
};
std::span<const IdentityRow> identity_rows();
const IdentityRow* find_identity_row(std::string_view structure, std::string_view member);

// A value found in one identity member: the bytes of the member it covers (from the member's
// start), its canonical key (a UUID's 16 bytes whichever form it is written in) and its text for
// people ("GPU-5b57e3bf-3ef8-9827-e2df-30d462191363", "0000:00:06.0", "0x6", "1324…").
struct IdentityValue {
  uint32_t width = 0;
  std::string key;
  std::string text;
};

// The value of a scalar member (gpuId, boardId); none for 0 and 0xffffffff
// (NV0000_CTRL_GPU_INVALID_ID: an unused slot of a gpuIds array).
std::optional<IdentityValue> identity_scalar(IdentityKind k, uint64_t v, uint32_t width);
// The value of a byte-array member (a UUID, binary or text; a serial); none when it holds none
// (all zero, an empty string, text that is no UUID).
std::optional<IdentityValue> identity_bytes(IdentityKind k, const uint8_t* p, uint32_t n);
// A PCI location, keyed by domain, bus and slot (the function is shown, not part of the key);
// none for 0000:00:00.0 (no GPU: an unused NV_ESC_CARD_INFO entry, an output not written yet).
std::optional<IdentityValue> identity_pci(uint64_t domain, uint64_t bus, uint64_t slot,
                                          uint64_t function);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (also MIG-, DLA-: nvGetUuidString, gpu_uuid.c) to
// its 16 bytes; none when `s` does not start with such a text.
std::optional<std::string> parse_uuid_text(std::string_view s);
// The text RM writes for 16 bytes: "GPU-" and the hex groups 8-4-4-4-12.
std::string uuid_text(std::string_view bytes16);

}  // namespace cudatool::ab
