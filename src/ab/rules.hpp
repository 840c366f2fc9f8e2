// What A/B normalisation does with each member of a known structure: compare it, rename it
// (handle, pointer, fd) or mask it by a rule found by comparing two identical runs. The rules and
// the evidence for each are listed in docs/ab.md.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "rm/tables.hpp"

namespace cudatool::ab {

enum class MemberClass : uint8_t {
  kLiteral,   // compared as it is
  kHandle,    // an RM handle: renamed (rm::member_kind gives kHandle)
  kPointer,   // a user or device address: renamed after the buffer or mapping it points into
  kFd,        // a file descriptor of the traced process: renamed after its device and opening
  kMasked,    // varies between identical runs (a MaskRule): not compared
  kIdentity,  // a GPU's identity (ab/identity.hpp): renamed gpu#0 …
};

// A member that differs between two runs of the same program for a reason that says nothing
// about the driver conversation, and what is done with it: kMasked (not compared) or a renaming
// class (kHandle, kPointer, kFd) that its name and type alone would not give it.
// Where a rule was found (and tests/integration/ab_real_test.cpp checks it is still needed).
enum class RuleEvidence : uint8_t {
  kCaptures,  // the two H200 captures of work.c (tests/data/captures trace_a, trace_b)
  kReplays,   // two replays of trace_a against the real libcuda 580 (ASLR differs between them)
};

struct MaskRule {
  std::string_view structure;  // "RS_SHARE_POLICY"
  std::string_view member;     // "target"
  MemberClass action;
  std::string_view reason;  // why it varies (docs/ab.md repeats it)
  RuleEvidence evidence = RuleEvidence::kCaptures;
};
std::span<const MaskRule> mask_rules();
const MaskRule* find_mask_rule(std::string_view structure, std::string_view member);

// The class of member `m` of `structure` (each element, for arrays). `rules` false: by name and
// type only, as if kMaskRules were empty (the tests show each rule is needed); `identity` false:
// as if the identity table (ab/identity.cpp) were empty.
MemberClass classify_member(std::string_view structure, const rm::FieldEntry& m, bool rules = true,
                            bool identity = true);

// Names of 64-bit members that hold addresses though their type is an integer (NvU64 `base` of
// UVM calls, `requestedBase`, `targetVa`, …).
bool is_address_name(std::string_view name);
bool is_fd_name(std::string_view name);

// Classes whose allocation creates a client (the class rows of rm/call_semantics.cpp:
// NV01_ROOT, NV01_ROOT_NON_PRIV, NV01_ROOT_CLIENT).
bool is_client_class(const rm::Tables& t, uint32_t cls);

}  // namespace cudatool::ab
