#include "ab/identity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace cudatool::ab {
namespace {

constexpr std::string_view kUuidReason =
    "a GPU's UUID: RM derives it from the board's own unique id, so another board (another "
    "machine, a guest's GPU) has another";
constexpr std::string_view kPciReason =
    "the PCI location (domain, bus, slot; the function with them) the machine's firmware gave the "
    "GPU; the same board in another slot or machine, or passed to a guest, has another";
constexpr std::string_view kGpuIdReason =
    "RM's gpuId, made from the GPU's PCI location (Linux: bus and slot), so it changes with it";
constexpr std::string_view kBoardReason = "the board id RM reports, per board as the gpuId is";
constexpr std::string_view kSerialReason = "the board's serial number (its inforom), per board";

// Found in NVIDIA's headers of every branch in src/rm/generated (ctrl0000gpu.h, ctrl2080gpu.h,
// ctrl0000system.h, nv-ioctl.h, uvm_types.h); tests/integration/ab_identity_test.cpp checks each
// row's member against every branch's tables and records two runs on fake GPUs that differ in
// them. To add a member: a row here; the test tells whether its type fits the kind.
constexpr std::array kRows{
    // UUIDs: every NvProcessorUuid of the UVM calls (UVM_REGISTER_GPU, _VASPACE, _CHANNEL,
    // UVM_MAP_EXTERNAL_ALLOCATION's per-GPU attributes, UVM_GET_GPU_UUID_TABLE …) is this member.
    IdentityRow{"NvProcessorUuid", "uuid", IdentityKind::kUuid, kUuidReason},
    // NV2080_CTRL_CMD_GPU_GET_GID_INFO: binary or "GPU-…" text by NV2080_GPU_CMD_GPU_GET_GID_FLAGS.
    IdentityRow{"NV2080_CTRL_GPU_GET_GID_INFO_PARAMS", "data", IdentityKind::kUuid, kUuidReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_UUID_INFO_PARAMS", "gpuUuid", IdentityKind::kUuid,
                kUuidReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS", "gpuUuid", IdentityKind::kUuid,
                kUuidReason},
    // PCI locations: NV_ESC_CARD_INFO's nv_pci_info_t, NV0000_CTRL_CMD_GPU_GET_PCI_INFO.
    IdentityRow{"nv_pci_info_t", "domain", IdentityKind::kPciLocation, kPciReason},
    IdentityRow{"nv_pci_info_t", "bus", IdentityKind::kPciLocation, kPciReason},
    IdentityRow{"nv_pci_info_t", "slot", IdentityKind::kPciLocation, kPciReason},
    IdentityRow{"nv_pci_info_t", "function", IdentityKind::kPciLocation, kPciReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS", "domain", IdentityKind::kPciLocation,
                kPciReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS", "bus", IdentityKind::kPciLocation,
                kPciReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS", "slot", IdentityKind::kPciLocation,
                kPciReason},
    // gpuIds.
    IdentityRow{"nv_ioctl_card_info_t", "gpu_id", IdentityKind::kGpuId, kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS", "gpuIds", IdentityKind::kGpuId,
                kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS", "excludedGpuIds", IdentityKind::kGpuId,
                kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS", "gpuIds", IdentityKind::kGpuId,
                kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_ATTACH_IDS_PARAMS", "gpuIds", IdentityKind::kGpuId, kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_ID_INFO_PARAMS", "gpuId", IdentityKind::kGpuId, kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", "gpuId", IdentityKind::kGpuId,
                kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_UUID_INFO_PARAMS", "gpuId", IdentityKind::kGpuId,
                kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_UUID_FROM_GPU_ID_PARAMS", "gpuId", IdentityKind::kGpuId,
                kGpuIdReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS", "gpuId", IdentityKind::kGpuId, kGpuIdReason},
    IdentityRow{"NV0000_CTRL_SYSTEM_GET_P2P_CAPS_PARAMS", "gpuIds", IdentityKind::kGpuId,
                kGpuIdReason},
    // Board ids and serials.
    IdentityRow{"NV0000_CTRL_GPU_GET_ID_INFO_PARAMS", "boardId", IdentityKind::kBoardId,
                kBoardReason},
    IdentityRow{"NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", "boardId", IdentityKind::kBoardId,
                kBoardReason},
    IdentityRow{"NV2080_CTRL_GPU_GET_OEM_BOARD_INFO_PARAMS", "serialNumber", IdentityKind::kSerial,
                kSerialReason},
};

constexpr uint32_t kInvalidGpuId = 0xffffffffu;  // NV0000_CTRL_GPU_INVALID_ID (ctrl0000gpu.h)
constexpr size_t kUuidBytes = 16;                // NV_UUID_LEN
constexpr size_t kUuidTextLen = 40;              // "GPU-" and 32 hex digits in 5 groups, no NUL
constexpr std::array kGroups{4, 2, 2, 2, 6};     // bytes per group (nvGetUuidString: 8-4-4-4-12)

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view identity_kind_name(IdentityKind k) {
  switch (k) {
    case IdentityKind::kUuid:
      return "uuid";
    case IdentityKind::kPciLocation:
      return "pci";
    case IdentityKind::kGpuId:
      return "gpu_id";
    case IdentityKind::kBoardId:
      return "board_id";
    case IdentityKind::kSerial:
      break;
  }
  return "serial";
}

std::string identity_name(IdentityKind k, uint32_t ordinal) {
  std::string s = "gpu#" + std::to_string(ordinal);
  switch (k) {
    case IdentityKind::kUuid:
      return s;
    case IdentityKind::kPciLocation:
      return s + ".pci";
    case IdentityKind::kGpuId:
      return s + ".id";
    case IdentityKind::kBoardId:
      return s + ".board";
    case IdentityKind::kSerial:
      break;
  }
  return s + ".serial";
}

std::span<const IdentityRow> identity_rows() {
  return kRows;
}

const IdentityRow* find_identity_row(std::string_view structure, std::string_view member) {
  for (const IdentityRow& r : kRows) {
    if (r.structure == structure && r.member == member) return &r;
  }
  return nullptr;
}

std::optional<std::string> parse_uuid_text(std::string_view s) {
  if (s.size() < kUuidTextLen) return std::nullopt;
  std::string_view prefix = s.substr(0, 4);
  if (prefix != "GPU-" && prefix != "MIG-" && prefix != "DLA-") return std::nullopt;
  std::string out;
  size_t at = 4;
  for (size_t g = 0; g < kGroups.size(); ++g) {
    if (g > 0 && s[at++] != '-') return std::nullopt;
    for (int b = 0; b < kGroups[g]; ++b, at += 2) {
      int hi = hex_digit(s[at]), lo = hex_digit(s[at + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi << 4 | lo));
    }
  }
  return out;
}

std::string uuid_text(std::string_view b) {
  std::string s = "GPU-";
  size_t at = 0;
  for (size_t g = 0; g < kGroups.size(); ++g) {
    if (g > 0) s += '-';
    for (int k = 0; k < kGroups[g] && at < b.size(); ++k, ++at) {
      s += fmt::format("{:02x}", static_cast<uint8_t>(b[at]));
    }
  }
  return s;
}

std::optional<IdentityValue> identity_scalar(IdentityKind k, uint64_t v, uint32_t width) {
  if (v == 0 || (width == 4 && v == kInvalidGpuId && k == IdentityKind::kGpuId)) {
    return std::nullopt;
  }
  IdentityValue out;
  out.width = width;
  out.key = std::to_string(v);
  out.text = fmt::format("{:#x}", v);
  return out;
}

std::optional<IdentityValue> identity_bytes(IdentityKind k, const uint8_t* p, uint32_t n) {
  std::string_view s(reinterpret_cast<const char*>(p), n);
  IdentityValue out;
  if (k == IdentityKind::kSerial) {
    std::string_view text = s.substr(0, std::min(s.size(), s.find('\0')));
    if (text.empty()) return std::nullopt;
    // The whole member: serials of other lengths are still the same member renamed.
    out.width = n;
    out.key = std::string(text);
    out.text = std::string(text);
    return out;
  }
  if (k != IdentityKind::kUuid) return std::nullopt;
  if (std::optional<std::string> b = parse_uuid_text(s)) {
    out.width = static_cast<uint32_t>(kUuidTextLen);
    out.key = std::move(*b);
  } else if (n >= kUuidBytes &&
             std::any_of(s.begin(), s.begin() + kUuidBytes, [](char c) { return c != 0; })) {
    out.width = static_cast<uint32_t>(kUuidBytes);
    out.key = std::string(s.substr(0, kUuidBytes));
  } else {
    return std::nullopt;
  }
  out.text = uuid_text(out.key);
  return out;
}

std::optional<IdentityValue> identity_pci(uint64_t domain, uint64_t bus, uint64_t slot,
                                          uint64_t function) {
  if ((domain | bus | slot | function) == 0) return std::nullopt;
  IdentityValue out;
  out.text = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, slot, function);
  // The GPU is named by domain, bus and slot, as RM's gpuId and NV0000_CTRL_GPU_GET_PCI_INFO
  // (which has no function) name it; the function is renamed with them.
  out.key = fmt::format("{:04x}:{:02x}:{:02x}", domain, bus, slot);
  return out;
}

}  // namespace cudatool::ab
