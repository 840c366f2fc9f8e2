#include "ab/rules.hpp"

#include <array>

#include "ab/identity.hpp"
#include "rm/call_semantics.hpp"
#include "rm/field.hpp"

namespace cudatool::ab {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Found by comparing tests/data/captures trace_a and trace_b (docs/ab.md, "Fields that vary between
// identical runs"): each entry is a member that still differed between the two runs after the
// renaming by name and type. tests/integration/ab_real_test.cpp (AbReal.EachRuleIsNeeded) checks
// that each rule seen in the captures is still needed; ab_replays_test.cpp the replays' rules.
constexpr std::array kMaskRules{
    // NV0000_CTRL_CMD_CLIENT_SET_INHERITED_SHARE_POLICY (events 10, 11 of both captures):
    // libcuda puts its client's handle in the policy's target (0xc1d00034 in trace_a,
    // 0xc1d00038 in trace_b, equal to hClient each time).
    MaskRule{"RS_SHARE_POLICY", "target", MemberClass::kHandle,
             "holds the client's handle (libcuda passes hClient), which RM assigns anew in "
             "every run"},
    // HOPPER_COMPUTE_A (and every graphics-engine object) is allocated with paramsSize 0 and
    // pAllocParms at a stack slot libcuda never fills: the class-sized bytes read there hold the
    // upper bits of a stack address (size 0x3d31c000, caps 0x7ffc beside pAllocParms
    // 0x7ffc3d31f6a8), which address-space layout changes in every run. version and flags (0)
    // stay compared.
    MaskRule{"NV_GR_ALLOCATION_PARAMETERS", "size", MemberClass::kMasked,
             "stack contents: libcuda passes paramsSize 0 and leaves the slot unset (bits of a "
             "stack address)",
             RuleEvidence::kReplays},
    MaskRule{"NV_GR_ALLOCATION_PARAMETERS", "caps", MemberClass::kMasked,
             "stack contents: libcuda passes paramsSize 0 and leaves the slot unset (bits of a "
             "stack address)",
             RuleEvidence::kReplays},
};

}  // namespace

std::span<const MaskRule> mask_rules() {
  return kMaskRules;
}

const MaskRule* find_mask_rule(std::string_view structure, std::string_view member) {
  for (const MaskRule& r : kMaskRules) {
    if (r.structure == structure && r.member == member) return &r;
  }
  return nullptr;
}

bool is_address_name(std::string_view n) {
  if (n == "addr" || n == "address" || n == "base" || n == "buffer" || n == "ptr" ||
      n == "tablePtr" || n == "controlBuffer" || n == "queueBuffer" || n == "targetVa") {
    return true;
  }
  return ends_with(n, "Address") || ends_with(n, "Addr") || ends_with(n, "Base") ||
         ends_with(n, "Ptr");
}

bool is_fd_name(std::string_view n) {
  return n == "fd" || ends_with(n, "_fd") || ends_with(n, "Fd");
}

MemberClass classify_member(std::string_view structure, const rm::FieldEntry& m, bool rules,
                            bool identity) {
  if (const MaskRule* r = rules ? find_mask_rule(structure, m.name) : nullptr) return r->action;
  // The GPU's identity: one table of its own (ab/identity.cpp).
  if (identity && find_identity_row(structure, m.name) != nullptr) return MemberClass::kIdentity;
  uint32_t w = m.elem_size;
  if (w == 4 && rm::member_kind(structure, m) == rm::ValueKind::kHandle)
    return MemberClass::kHandle;
  if (w == 4 && is_fd_name(m.name)) return MemberClass::kFd;
  if (w == 8 &&
      (m.type == "NvP64" || (!m.type.empty() && m.type.back() == '*') || is_address_name(m.name))) {
    return MemberClass::kPointer;
  }
  return MemberClass::kLiteral;
}

bool is_client_class(const rm::Tables& t, uint32_t cls) {
  return (rm::class_does(t, cls) & rm::kClassClient) != 0;
}

}  // namespace cudatool::ab
