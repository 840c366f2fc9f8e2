// Known differences (docs/ab.md, "Known differences"): calls or members a user expects to differ
// between two machines — a control the guest does not support, the floorsweeping masks of two
// boards — given on the command line (`ab --ignore SPEC`) or one per line in a file
// (`ab --expect FILE`), hidden from the comparison after it is made, with a count of what each
// one hid. The alignment is not changed: a hidden call is still where it was.
//
//   SPEC := CALL | MEMBER | CALL ':' MEMBER
//   CALL   a call's name as the report shows it — the escape or UVM call (NV_ESC_RM_FREE,
//          UVM_REGISTER_GPU), the control command (NV2080_CTRL_CMD_GR_GET_TPC_MASK), the class of
//          an allocation, a system call (open:, with the colon) — or a glob of one (NV2080_*)
//   MEMBER a member as the report names it (params.tpcMask, arg.status), with or without its
//          array indices (params.gpuIds, params.gpuIds[1]), or its last name alone (tpcMask); a
//          glob (params.*Mask)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"

namespace cudatool::ab {

struct KnownDifference {
  std::string spec;    // as given
  std::string origin;  // "--ignore", "machines.txt:3"
  std::string call;    // glob on the call's names; "" any call
  std::string member;  // glob on the member; "" the whole call
  // What it hid (filled by compare): divergences gone entirely, and members taken out of
  // divergences that stay for other members.
  uint64_t hid = 0, members = 0;
};

// Errors name the origin and what is wrong with the spec.
Result<KnownDifference> parse_known(std::string_view spec, std::string origin);
// A file of specs, one per line; '#' starts a comment, blank lines are skipped. Errors: the file
// cannot be read, a line holds more than one spec or a bad one (FILE line N: …).
Result<std::vector<KnownDifference>> read_known_file(const std::string& path);
// The same over a file's text, `name` standing for the file.
Result<std::vector<KnownDifference>> parse_known_text(std::string_view text,
                                                      const std::string& name);

// Whether `field` (FieldDiff::field: "params.grInfoList[3].data") is one `member` names.
bool known_member_matches(std::string_view member, std::string_view field);
// Whether `call` names a call whose names (escape or UVM call, control, class, system call) are
// `names`.
bool known_call_matches(std::string_view call, const std::vector<std::string_view>& names);

}  // namespace cudatool::ab
