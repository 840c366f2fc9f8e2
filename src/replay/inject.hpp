// `--inject SPEC`: one changed answer of a replay (docs/replay.md, "Injecting").
//
//   SPEC     = SELECTOR "," EFFECT
//   SELECTOR = "seq=" N                                   the recorded call with that seq
//            | ("cmd=" NAME|HEX | "class=" NAME|HEX | "call=" NAME) ["," "nth=" K]
//                                                         the K-th (1-based, default 1) recorded
//                                                         RM control / alloc / escape, UVM call
//                                                         or system call ("mmap", "open") of it
//   EFFECT   = "status=" NAME|N                           the NV_STATUS (RM status, UVM rmStatus)
//            | "member=" PATH "," "value=" N              one member: params.fbInfoList[3].data,
//                                                         arg.hClass, params+0x1c, …
//            | "errno=" NAME|N                            the call fails with -1 and that errno
//            | "ret=" N                                   the return value
//
// Parsing only checks the grammar; names are resolved against the driver branch of the trace
// when the answers are built (answers.cpp), where an unknown name or a selector that matches
// nothing is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"

namespace cudatool::replay {

struct Injection {
  std::string text;  // the spec as given, for messages
  // selector
  std::optional<uint64_t> seq;
  std::string cmd;   // name or number text ("NV2080_CTRL_CMD_FB_GET_INFO_V2", "0x20801303")
  std::string cls;   // class name or number text
  std::string call;  // escape, UVM call or system call name
  uint32_t nth = 1;  // 1-based
  // effect
  std::string status;  // name or number text
  std::string member;  // member path
  std::optional<uint64_t> value;
  std::string err;  // errno name or number text
  std::optional<int64_t> ret;
};

// Parses one spec. Errors name the spec, the key and why ("inject 'seq=x,status=1': seq: 'x' is
// not a number").
Result<Injection> parse_injection(std::string_view spec);

// A number as the specs write them: decimal, 0x-hex, or negative decimal for ret.
std::optional<uint64_t> parse_number(std::string_view s);
// An errno by name ("ENOMEM") or number; nullopt when neither.
std::optional<int> parse_errno(std::string_view s);

}  // namespace cudatool::replay
