// The layout of one kernel-ABI request in one driver branch, as a proxy needs it (docs/abi.md):
// its parameter structure and size, the members that are pointers (and what RM copies behind
// them), fds and RM handles, and whether the parameters are "simple" (plain bytes, copied in and
// out as they are). Also the differences between two branches' layouts of a request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/abi_surface.hpp"
#include "rm/tables.hpp"

namespace cudatool {

// What one member means to a proxy. Every question "is this member an fd / a handle / a
// pointer" is answered by abi_member_role() alone, so that one place can later read the
// call-semantics table instead.
enum class AbiMemberRole : uint8_t { kPlain, kHandle, kFd, kPointer };
std::string_view abi_member_role_name(AbiMemberRole r);  // "plain", "handle", "fd", "pointer"
AbiMemberRole abi_member_role(const rm::StructEntry& s, const rm::FieldEntry& m);

struct AbiMember {
  std::string name;  // a path through nested structures and arrays: "levels[].pFmt"
  std::string_view type;
  int64_t offset = -1;  // -1: not in the tables' layouts (a pointer member listed by name only)
  int64_t size = -1;
  AbiMemberRole role = AbiMemberRole::kPlain;
  // kPointer: what RM does with it ("followed", "bounded", "not copied"; "" for an escape or UVM
  // argument's pointer, which the kernel's ioctl layer handles) and what it points to
  // ("grInfoListSize × NV2080_CTRL_GR_INFO (8 bytes)"), "" when the tables give no extent.
  std::string_view pointer_status;
  std::string points_to;
};

struct AbiLayout {
  std::string_view params;      // "" when the request takes no parameters
  int32_t size = 0;             // sizeof(params); -1 unmeasured
  std::string_view alt_params;  // an escape's second accepted structure (NVOS64 for RM_ALLOC)
  int32_t alt_size = 0;
  bool members_known = false;         // the tables carry the structure's members
  std::vector<AbiMember> members;     // every member (members_known), else the pointer members
  [[nodiscard]] bool simple() const;  // no pointer and no fd member
  [[nodiscard]] std::vector<const AbiMember*> with_role(AbiMemberRole r) const;
};

AbiLayout abi_layout(const rm::Tables& t, AbiKind kind, uint32_t value);

// Differences of one request's layout between two branches.
struct AbiLayoutChange {
  AbiKind kind = AbiKind::kEscape;
  uint32_t value = 0;
  std::string_view name;  // in the newer branch
  std::string_view old_params, new_params;
  int32_t old_size = 0, new_size = 0;
  std::vector<std::string> added, removed, moved, retyped;  // "name (type, +off)" texts
  std::vector<std::string> roles;  // pointer / fd / handle members that changed their role
  bool unknown_members = false;    // one side's tables lack the members: size only
  [[nodiscard]] bool empty() const;
};
AbiLayoutChange diff_abi_layout(const rm::Tables& old_t, const rm::Tables& new_t, AbiKind kind,
                                uint32_t value);

// `abi OLD NEW`: requests new in NEW's code, gone from it, and the layout changes of those both
// use. Requests are matched by kind and value.
struct AbiDiff {
  std::vector<const AbiRequest*> added;    // in NEW's surface only
  std::vector<const AbiRequest*> removed;  // in OLD's only
  std::vector<AbiLayoutChange> changed;    // in both, with a layout that differs
  size_t common = 0;
};
AbiDiff diff_abi(const AbiSurface& old_s, const AbiSurface& new_s);

}  // namespace cudatool
